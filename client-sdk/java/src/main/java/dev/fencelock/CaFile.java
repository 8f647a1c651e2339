/*
 * The SSLContext of the Builder's caFile: TLS that trusts exactly the CA certificates of one PEM
 * file (one or more), instead of the JDK's trust store. invalid_request when the file cannot be
 * read or holds no certificate; GeneralSecurityException when the JDK cannot build the context.
 */
package dev.fencelock;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

final class CaFile {
  private CaFile() {}

  static SSLContext context(Path caFile) throws FencelockException, GeneralSecurityException {
    Collection<? extends Certificate> certificates;
    try (InputStream in = Files.newInputStream(caFile)) {
      certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
    } catch (IOException e) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "cannot read the CA file " + caFile + ": " + e.getMessage(), e);
    }
    if (certificates.isEmpty()) {
      throw Checks.invalid("the CA file " + caFile + " holds no certificate");
    }
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    try {
      store.load(null, null);
    } catch (IOException e) {
      throw new GeneralSecurityException(e);
    }
    int i = 0;
    for (Certificate certificate : certificates) {
      store.setCertificateEntry("fencelock-ca-" + i++, certificate);
    }
    TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(store);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trust.getTrustManagers(), null);
    return context;
  }
}
