/*
 * One fencelockd base URL and the HttpClient (a pool of keep-alive connections, HTTP/1.1, no
 * redirects) that reaches it: one round trip at a time per call, no retries (Transport retries).
 *
 * A round trip returns the answer whatever its status, or fails with a RoundTripFailure that says
 * whether the request may have reached fencelockd (maybeDelivered). A grant's round trip (`late`
 * given) never reuses a connection idle longer than idleReuseLimit, and is never cancelled when
 * its caller is interrupted: an answer that still arrives goes to `late`. The body is bounded by
 * LimitedBody and must arrive within a second of the request's timeout.
 * Thread safety: safe to use from any thread.
 */
package dev.fencelock;

import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

final class Endpoint {
  private static final String kUserAgent = "fencelock-java/0.1.0";
  // How long past its timeout a request may take to deliver the body after its head.
  private static final long kBodySlackNanos = TimeUnit.SECONDS.toNanos(1);

  /** What to do with a grant's answer that arrives after its caller was interrupted. */
  interface LateGrant {
    void release(Reply reply);
  }

  /** A round trip that failed: its error, and whether the request may have reached fencelockd. */
  static final class RoundTripFailure extends Exception {
    private static final long serialVersionUID = 1L;
    final FencelockException error;
    final boolean maybeDelivered;

    RoundTripFailure(FencelockException error, boolean maybeDelivered) {
      super(error.getMessage(), null, false, false);
      this.error = error;
      this.maybeDelivered = maybeDelivered;
    }
  }

  final URI base;
  private final String apiKey;
  private final SSLContext sslContext;
  private final Duration connectTimeout;
  private final Duration idleReuseLimit;
  private HttpClient http;
  private long lastUsedNanos;
  private boolean used;

  /** `base` as parse() returns it; `apiKey` may be null; `sslContext` is used for https:// only. */
  Endpoint(URI base, String apiKey, SSLContext sslContext, Duration connectTimeout,
      Duration idleReuseLimit) {
    this.base = base;
    this.apiKey = apiKey;
    this.sslContext = sslContext;
    this.connectTimeout = connectTimeout;
    this.idleReuseLimit = idleReuseLimit;
    this.http = newHttpClient();
  }

  /** `url` as a base URL, scheme://host:port/; invalid_request unless it is only that. */
  static URI parse(String url) throws FencelockException {
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException | NullPointerException e) {
      throw Checks.invalid("endpoint " + url + " is not a URL");
    }
    String scheme = uri.getScheme();
    if (!"http".equals(scheme) && !"https".equals(scheme)) {
      throw Checks.invalid("endpoint " + url + " must start with http:// or https://");
    }
    if (uri.getHost() == null) {
      throw Checks.invalid("endpoint " + url + " has no host");
    }
    if ((uri.getRawPath() != null && !uri.getRawPath().isEmpty() && !uri.getRawPath().equals("/"))
        || uri.getRawQuery() != null || uri.getRawFragment() != null || uri.getRawUserInfo() != null) {
      throw Checks.invalid("endpoint " + url + ": only scheme://host:port is allowed");
    }
    int port = uri.getPort();
    if (port == -1) {
      port = scheme.equals("https") ? 443 : 80;
    }
    if (port < 1 || port > 65535) {
      throw Checks.invalid("endpoint " + url + ": the port must be 1 .. 65535");
    }
    try {
      return new URI(scheme, null, uri.getHost(), port, "/", null, null);
    } catch (URISyntaxException e) {
      throw Checks.invalid("endpoint " + url + " is not a URL");
    }
  }

  private HttpClient newHttpClient() {
    HttpClient.Builder builder = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .followRedirects(HttpClient.Redirect.NEVER)
        .connectTimeout(connectTimeout);
    if (base.getScheme().equals("https")) {
      SSLParameters parameters = new SSLParameters();
      parameters.setProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
      builder.sslContext(sslContext).sslParameters(parameters);
    }
    return builder.build();
  }

  private synchronized HttpClient take(boolean unsafe) {
    long now = System.nanoTime();
    if (unsafe && used && now - lastUsedNanos > idleReuseLimit.toNanos()) {
      http = newHttpClient();  // the old one's idle connections close with it
    }
    used = true;
    lastUsedNanos = now;
    return http;
  }

  private synchronized void touched() {
    lastUsedNanos = System.nanoTime();
  }

  /**
   * One request. `late` is null for a call safe to repeat; for a grant it is what to do with
   * an answer that arrives after the calling thread was interrupted.
   */
  Reply roundTrip(String method, String path, String body, Duration timeout, LateGrant late)
      throws RoundTripFailure {
    HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
        .timeout(timeout)
        .header("User-Agent", kUserAgent)
        .header("Accept", "application/json");
    if (apiKey != null) {
      request.header("Authorization", "Bearer " + apiKey);
    }
    if (body != null) {
      request.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    } else {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    }
    HttpClient client = take(late != null);
    long sentAt = System.nanoTime();
    CompletableFuture<HttpResponse<String>> pending =
        client.sendAsync(request.build(), info -> new LimitedBody());
    try {
      // The request's own timeout covers the answer's head only: this bounds its body too.
      HttpResponse<String> response = pending.get(timeout.toNanos() + kBodySlackNanos,
          TimeUnit.NANOSECONDS);
      touched();
      return new Reply(response.statusCode(), response.body(), response.headers(), sentAt);
    } catch (InterruptedException e) {
      if (late != null) {
        // Never cancel a grant: an answer the service already sent would be dropped unread,
        // and the lock held until its ttl. The grant, if it comes, is released on arrival.
        pending.thenAccept(response -> late.release(
            new Reply(response.statusCode(), response.body(), response.headers(), sentAt)));
      } else {
        pending.cancel(true);
      }
      throw new RoundTripFailure(new FencelockException(FencelockException.CANCELLED,
          base + ": interrupted" + (late != null ? "; a grant that still arrives is released"
              : "; the request was cancelled")), true);
    } catch (TimeoutException e) {
      // An answer that arrived just now is used, not dropped: a grant would be left held (or,
      // released, be the very grant a repeat of its request is about to be answered).
      if (!pending.cancel(true) && !pending.isCompletedExceptionally()) {
        HttpResponse<String> response = pending.join();
        touched();
        return new Reply(response.statusCode(), response.body(), response.headers(), sentAt);
      }
      throw transport("timed out reading the answer", e, true);
    } catch (ExecutionException e) {
      throw classify(e.getCause());
    }
  }

  private RoundTripFailure classify(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof SSLException) {
        return new RoundTripFailure(new FencelockException(FencelockException.TLS,
            base + ": TLS failed: " + t.getMessage(), cause), false);
      }
    }
    if (cause instanceof HttpConnectTimeoutException) {
      return transport("timed out connecting", cause, false);
    }
    if (cause instanceof HttpTimeoutException) {
      return transport("timed out", cause, true);
    }
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof ConnectException || t instanceof UnresolvedAddressException
          || t instanceof UnknownHostException) {
        return transport("cannot connect: " + describe(t), cause, false);
      }
    }
    return transport("sending or reading failed: " + describe(cause), cause, true);
  }

  private RoundTripFailure transport(String what, Throwable cause, boolean maybeDelivered) {
    return new RoundTripFailure(new FencelockException(FencelockException.TRANSPORT,
        base + ": " + what, cause), maybeDelivered);
  }

  private static String describe(Throwable t) {
    if (t instanceof ConnectException && t.getMessage() == null) {
      return "connection refused";
    }
    return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
  }
}
