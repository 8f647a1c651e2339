package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;

/** HTTPS with a CA file and API keys, against fencelockd instances of the tests' own. */
@EnabledIfEnvironmentVariable(named = "FENCELOCKD", matches = ".+")
class SecurityTest {
  private static String code(ClientTest.Executable call) {
    return assertThrows(FencelockException.class, call::run).code();
  }

  private static String sha256(String secret) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  @DisplayName("HTTPS checks the certificate against the CA file, and the API key is sent as a bearer token")
  void tlsAndKeys(@TempDir Path tmp) throws Exception {
    Path cert = tmp.resolve("cert.pem");
    Path key = tmp.resolve("key.pem");
    Support.run(List.of("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", key.toString(), "-out", cert.toString(), "-days", "1", "-subj", "/CN=fencelock-test",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"));
    String locker = "java-" + "a".repeat(40);
    String reader = "java-" + "b".repeat(40);
    String slow = "java-" + "c".repeat(40);
    Path auth = tmp.resolve("keys.json");
    Files.writeString(auth, "{\"keys\":["
        + "{\"id\":\"locker\",\"secret_sha256\":\"" + sha256(locker) + "\",\"names\":[\"allowed.*\"],\"rights\":[\"lock\",\"read\"]},"
        + "{\"id\":\"reader\",\"secret_sha256\":\"" + sha256(reader) + "\",\"names\":[\"*\"],\"rights\":[\"read\"]},"
        + "{\"id\":\"slow\",\"secret_sha256\":\"" + sha256(slow) + "\",\"names\":[\"*\"],\"rights\":[\"read\"],"
        + "\"rate\":1,\"burst\":1}]}");
    int port = Support.SPARE_PORT_BASE + 3;
    try (Support.OwnFencelockd own = new Support.OwnFencelockd(port, List.of("--tls-cert", cert.toString(),
        "--tls-key", key.toString(), "--auth-file", auth.toString()))) {
      String https = "https://127.0.0.1:" + own.port;
      // FENCELOCK_CACERT and FENCELOCK_API_KEY, as the CLI reads them.
      FencelockClient trusted = FencelockClient.builder().fromEnvironment(java.util.Map.of(
          "FENCELOCK_ENDPOINT", https, "FENCELOCK_CACERT", cert.toString(), "FENCELOCK_API_KEY", locker))
          .maxRetries(0).build();
      // TLS and the key passed; the lock nodes (closed ports) did not answer.
      assertEquals(FencelockException.UNAVAILABLE, code(() -> trusted.acquire("allowed.x", Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals(FencelockException.FORBIDDEN, code(() -> trusted.status("elsewhere")));
      // A revoke needs the right admin, which the locker lacks.
      assertEquals(FencelockException.FORBIDDEN, code(() -> trusted.revoke("allowed.x", Duration.ofSeconds(1))));
      FencelockClient readOnly = FencelockClient.builder().endpoints(https).caFile(cert).apiKey(reader).maxRetries(0).build();
      FencelockException e = assertThrows(FencelockException.class,
          () -> readOnly.acquire("allowed.x", Duration.ofSeconds(1), Duration.ZERO));
      assertEquals(FencelockException.FORBIDDEN, e.code());
      assertEquals(403, e.httpStatus());
      assertFalse(e.getMessage().contains(reader));
      FencelockClient anonymous = FencelockClient.builder().endpoints(https).caFile(cert).maxRetries(0).build();
      assertEquals(FencelockException.UNAUTHENTICATED, code(() -> anonymous.status("allowed.x")));
      FencelockClient untrusting = FencelockClient.builder().endpoints(https).apiKey(locker).maxRetries(0).build();
      assertEquals(FencelockException.TLS, code(() -> untrusting.status("allowed.x")));
      assertEquals(FencelockException.TLS, code(() -> untrusting.acquire("allowed.x", Duration.ofSeconds(1), Duration.ZERO)));
      FencelockClient limited = FencelockClient.builder().endpoints(https).caFile(cert).apiKey(slow).maxRetries(0).build();
      FencelockException over = null;
      for (int i = 0; i < 5 && over == null; ++i) {
        try {
          limited.status("x");
        } catch (FencelockException refused) {
          if (!refused.code().equals(FencelockException.UNAVAILABLE)) {
            over = refused;
          }
        }
      }
      assertEquals(FencelockException.RATE_LIMITED, over == null ? null : over.code());
      assertEquals(429, over.httpStatus());
      assertTrue(over.retryAfter().isPresent());
      assertTrue(over.isRetryable());
      FencelockClient plain = FencelockClient.builder().endpoints("http://127.0.0.1:" + port).maxRetries(0).build();
      assertEquals(FencelockException.PLAIN_HTTP_ON_TLS_PORT,
          code(() -> plain.acquire("allowed.x", Duration.ofSeconds(1), Duration.ZERO)));
    }
  }
}
