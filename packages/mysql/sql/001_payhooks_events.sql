-- The store table of mysqlStore (createTableSql('payhooks_events')).
CREATE TABLE IF NOT EXISTS `payhooks_events` (
  event_id VARBINARY(512) NOT NULL PRIMARY KEY,
  token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  expires_at DATETIME(6) NOT NULL,
  body_digest CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
  KEY expiry_idx (expires_at)
) ENGINE=InnoDB;
