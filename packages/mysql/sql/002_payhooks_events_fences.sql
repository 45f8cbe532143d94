-- The ordering fences of mysqlStore (createFenceTableSql('payhooks_events')).
CREATE TABLE IF NOT EXISTS `payhooks_events_fences` (
  ordering_key VARBINARY(512) NOT NULL PRIMARY KEY,
  holder VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  held_until DATETIME(6) NOT NULL,
  held_since DATETIME(6) NULL,
  holder_event_id VARBINARY(512) NULL,
  holder_event_type VARBINARY(255) NULL,
  mark_at DOUBLE NULL,
  mark_type VARBINARY(255) NULL,
  mark_id VARBINARY(512) NULL,
  fence_token BIGINT NOT NULL DEFAULT 0,
  keep_until DATETIME(6) NOT NULL,
  KEY keep_idx (keep_until),
  KEY held_idx (held_since, ordering_key)
) ENGINE=InnoDB;
