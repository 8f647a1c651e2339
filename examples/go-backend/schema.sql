CREATE TABLE IF NOT EXISTS accounts (
  id            text   PRIMARY KEY,
  balance       bigint NOT NULL DEFAULT 0,
  current_token bigint NOT NULL DEFAULT 0   -- the newest fencing token that touched the row
);
