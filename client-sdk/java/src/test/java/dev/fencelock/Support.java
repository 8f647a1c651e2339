/*
 * What the live tests share: the stack's addresses (from test.sh's environment), unique lock
 * names, and real processes a test may start or pause — every wait bounded.
 *
 *   FENCELOCK_ENDPOINT, JDBC_URL     the live stack
 *   FENCELOCK_STACK_DIR              its directory (fencelockd.pid, for pausing it)
 *   FENCELOCK_REDIS_PORTS            its redis-servers, "P1,P2,P3"
 *   FENCELOCKD                       the fencelockd binary, for instances of the tests' own
 *   FENCELOCK_SPARE_PORT_BASE        ports the tests may use for their own servers
 */
package dev.fencelock;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

final class Support {
  static final String ENDPOINT = env("FENCELOCK_ENDPOINT");
  static final String JDBC_URL = env("JDBC_URL");
  static final String STACK_DIR = env("FENCELOCK_STACK_DIR");
  static final String REDIS_PORTS = env("FENCELOCK_REDIS_PORTS");
  static final String FENCELOCKD = env("FENCELOCKD");
  static final int SPARE_PORT_BASE = Integer.parseInt(System.getenv().getOrDefault("FENCELOCK_SPARE_PORT_BASE", "18250"));

  private Support() {}

  private static String env(String name) {
    return System.getenv().getOrDefault(name, "");
  }

  static boolean hasStack() {
    return !ENDPOINT.isEmpty();
  }

  static boolean hasPostgres() {
    return !JDBC_URL.isEmpty();
  }

  static String uniqueName(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 12);
  }

  static FencelockClient client() throws FencelockException {
    return FencelockClient.builder().endpoints(ENDPOINT).retryBackoff(Duration.ofMillis(10)).build();
  }

  interface Grant {
    Lease get() throws FencelockException;
  }

  /**
   * A grant tried again while it is answered 503 (10 times, 0.1 s apart): on this loaded 2-core
   * machine fencelockd now and then misses its node timeout on every node at once and answers 503
   * for a moment. The client rightly does not retry an acquire on 503; tests that are not about
   * unavailability use this.
   */
  static Lease patiently(Grant grant) throws Exception {
    for (int i = 0; i < 10; ++i) {
      try {
        return grant.get();
      } catch (FencelockException e) {
        if (!e.code().equals(FencelockException.UNAVAILABLE)) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
    return grant.get();
  }

  static boolean waitUntil(BooleanSupplier condition, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(10);
    }
    return condition.getAsBoolean();
  }

  static int closedPort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** Deletes lock `name`'s key on every lock node, as if its lease had expired everywhere. */
  static void deleteLockKeys(String name) throws Exception {
    for (String port : REDIS_PORTS.split(",")) {
      run(List.of("redis-cli", "-h", "127.0.0.1", "-p", port, "DEL", "fencelock:lock:" + name));
    }
  }

  static void run(List<String> command) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IOException(command + " did not finish in 30 s");
    }
    if (process.exitValue() != 0) {
      throw new IOException(command + " failed with exit code " + process.exitValue());
    }
  }

  static long stackFencelockdPid() throws IOException {
    return Long.parseLong(Files.readString(Path.of(STACK_DIR, "fencelockd.pid")).strip());
  }

  /** A fencelockd of the tests' own whose lock nodes are closed ports: it answers 503. Always stopped. */
  static final class OwnFencelockd implements AutoCloseable {
    final Process process;
    final Path dir;
    final int port;

    OwnFencelockd(int port, List<String> extra) throws Exception {
      this.port = port;
      dir = Files.createTempDirectory("fencelock-java-");
      List<String> command = new ArrayList<>(List.of(FENCELOCKD, "--listen", "127.0.0.1:" + port,
          "--redis", "127.0.0.1:" + closedPort() + ",127.0.0.1:" + closedPort() + ",127.0.0.1:" + closedPort(),
          "--tokens", "sqlite:" + dir.resolve("tokens.db")));
      command.addAll(extra);
      process = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(dir.resolve("fencelockd.log").toFile()).start();
      if (!waitUntil(() -> answers(port) || !process.isAlive(), Duration.ofSeconds(10)) || !process.isAlive()) {
        close();
        throw new IOException("fencelockd on " + port + " did not start");
      }
    }

    private static boolean answers(int port) {
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return true;
      } catch (IOException e) {
        return false;
      }
    }

    @Override
    public void close() throws IOException {
      process.destroy();
      try {
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
      try (var files = Files.walk(dir)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** An HTTP answer that closes its connection, for RecordingServer. */
  static String httpAnswer(int status, String body) {
    return "HTTP/1.1 " + status + " Whatever\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  /** A grant as fencelockd answers a repeated acquire. */
  static final String REPEATED_GRANT = httpAnswer(200, "{\"name\":\"x\",\"lease\":\"5.repeated\",\"token\":5,"
      + "\"ttl_ms\":10000,\"validity_ms\":9000,\"waited_ms\":0,\"repeated\":true}");

  /**
   * A loopback HTTP server that reads each request whole (head and Content-Length body), records
   * its method, target and body, and answers the i-th request with answers[i] (the last one from then on);
   * null closes the connection without answering: the request was delivered, its answer lost. One
   * request per connection.
   */
  static final class RecordingServer implements AutoCloseable {
    final List<String> methods = Collections.synchronizedList(new ArrayList<>());
    final List<String> targets = Collections.synchronizedList(new ArrayList<>());
    final List<String> bodies = Collections.synchronizedList(new ArrayList<>());
    final String url;
    private final ServerSocket listener;
    private final List<String> answers;

    RecordingServer(String... answers) throws IOException {
      this.answers = java.util.Arrays.asList(answers);
      listener = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
      url = "http://127.0.0.1:" + listener.getLocalPort();
      Thread thread = new Thread(this::serve, "recording-server");
      thread.setDaemon(true);
      thread.start();
    }

    private void serve() {
      while (!listener.isClosed()) {
        try (Socket connection = listener.accept()) {
          connection.setSoTimeout(2000);
          InputStream in = connection.getInputStream();
          ByteArrayOutputStream data = new ByteArrayOutputStream();
          String text = "";
          int end;
          while ((end = text.indexOf("\r\n\r\n")) < 0) {
            int b = in.read();
            if (b < 0) {
              break;
            }
            data.write(b);
            text = data.toString(StandardCharsets.ISO_8859_1);
          }
          if (end < 0) {
            continue;
          }
          String[] head = text.substring(0, end).split("\r\n");
          int length = 0;
          for (String line : head) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
              length = Integer.parseInt(line.substring(15).strip());
            }
          }
          String body = new String(in.readNBytes(length), StandardCharsets.UTF_8);
          String answer;
          synchronized (targets) {
            answer = answers.get(Math.min(targets.size(), answers.size() - 1));
            methods.add(head[0].split(" ")[0]);
            targets.add(head[0].split(" ")[1]);
            bodies.add(body);
          }
          if (answer != null) {
            connection.getOutputStream().write(answer.getBytes(StandardCharsets.UTF_8));
            connection.getOutputStream().flush();
          }
        } catch (IOException closed) {
          // the listener closed (the test is over), or the client gave up
        }
      }
    }

    @Override
    public void close() throws IOException {
      listener.close();
    }
  }
}
