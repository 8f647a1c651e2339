-- One row per account. current_token is the newest fencing token that touched the row (lock
-- "account-<id>"); a write with an older token is refused. balance has a default so that a fenced
-- read of a new account can leave a placeholder row (fencelock.postgres, "placeholder").
CREATE TABLE IF NOT EXISTS accounts (
  id            text   PRIMARY KEY,
  balance       bigint NOT NULL DEFAULT 0,
  current_token bigint NOT NULL DEFAULT 0
);
