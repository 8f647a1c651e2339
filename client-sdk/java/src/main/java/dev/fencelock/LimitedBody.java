/*
 * An answer's body as text, at most kMaxBody bytes: a larger one (a hostile or broken server)
 * fails the round trip with an IOException instead of growing the heap without bound.
 * fencelockd's answers are a few hundred bytes. One instance per response.
 */
package dev.fencelock;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

final class LimitedBody implements HttpResponse.BodySubscriber<String> {
  private static final int kMaxBody = 1 << 20;

  private final CompletableFuture<String> result = new CompletableFuture<>();
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private Flow.Subscription subscription;

  @Override
  public CompletionStage<String> getBody() {
    return result;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    s.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(List<ByteBuffer> buffers) {
    if (result.isDone()) {
      return;
    }
    for (ByteBuffer buffer : buffers) {
      if (bytes.size() + (long) buffer.remaining() > kMaxBody) {
        subscription.cancel();
        result.completeExceptionally(
            new IOException("the answer's body is over " + kMaxBody + " bytes"));
        return;
      }
      byte[] chunk = new byte[buffer.remaining()];
      buffer.get(chunk);
      bytes.write(chunk, 0, chunk.length);
    }
  }

  @Override
  public void onError(Throwable error) {
    result.completeExceptionally(error);
  }

  @Override
  public void onComplete() {
    result.complete(new String(bytes.toByteArray(), StandardCharsets.UTF_8));
  }
}
