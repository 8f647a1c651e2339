package dev.fencelock;

import java.time.Duration;

/**
 * How a lease keeper renews (FencelockClient.keep, lock, lockSet, permit).
 *
 * @param renewWhenLeft extend when this fraction of the ttl is left; default 1/3; 0.05 .. 0.95
 * @param maxRenewals extend at most this many times, then let the lease run out (the lost signal
 *     fires before it ends); default 0 = no bound
 * @param maxHold stop extending once the lease was held this long; default null = no bound
 * @param lostMargin declare the lease lost this long before its deadline when it was not renewed
 *     by then; default null = a tenth of the ttl, at least 20 ms and at most half the ttl
 */
public record RenewOptions(double renewWhenLeft, int maxRenewals, Duration maxHold,
    Duration lostMargin) {
  /** Renew when a third of the ttl is left, without bound, lost a tenth of the ttl early. */
  public static RenewOptions defaults() {
    return new RenewOptions(1.0 / 3.0, 0, null, null);
  }

  public RenewOptions withRenewWhenLeft(double fraction) {
    return new RenewOptions(fraction, maxRenewals, maxHold, lostMargin);
  }

  public RenewOptions withMaxRenewals(int count) {
    return new RenewOptions(renewWhenLeft, count, maxHold, lostMargin);
  }

  public RenewOptions withMaxHold(Duration hold) {
    return new RenewOptions(renewWhenLeft, maxRenewals, hold, lostMargin);
  }

  public RenewOptions withLostMargin(Duration margin) {
    return new RenewOptions(renewWhenLeft, maxRenewals, maxHold, margin);
  }

  void check() throws FencelockException {
    if (!(renewWhenLeft >= 0.05 && renewWhenLeft <= 0.95)) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "renewWhenLeft must be 0.05 .. 0.95");
    }
    if (maxRenewals < 0) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "maxRenewals must be 0 (no bound) or more");
    }
    if ((maxHold != null && maxHold.isNegative())
        || (lostMargin != null && (lostMargin.isNegative() || lostMargin.isZero()))) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "maxHold and lostMargin must be positive");
    }
  }
}
