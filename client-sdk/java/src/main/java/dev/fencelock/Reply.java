/*
 * One answer of fencelockd as it arrived, undecoded: its HTTP status, its body (at most
 * LimitedBody's bound), its headers, and the System.nanoTime() at which its request was sent —
 * the instant a lease's deadline counts from. Immutable.
 */
package dev.fencelock;

import java.net.http.HttpHeaders;

final class Reply {
  final int status;
  final String body;
  final HttpHeaders headers;
  final long sentAtNanos;

  Reply(int status, String body, HttpHeaders headers, long sentAtNanos) {
    this.status = status;
    this.body = body;
    this.headers = headers;
    this.sentAtNanos = sentAtNanos;
  }
}
