-- The journal of mysqlJournal (createJournalTableSql('payhooks_journal')).
CREATE TABLE IF NOT EXISTS `payhooks_journal` (
  at BIGINT NOT NULL,
  id VARBINARY(255) NOT NULL,
  event_id VARBINARY(512) NOT NULL,
  event_type VARBINARY(1024) NOT NULL,
  created_at TEXT CHARACTER SET utf8mb4 NULL,
  status SMALLINT NOT NULL,
  outcome VARBINARY(64) NOT NULL,
  instance TEXT CHARACTER SET utf8mb4 NOT NULL,
  duration_ms INT NOT NULL,
  secret_index SMALLINT NOT NULL,
  secret_label TEXT CHARACTER SET utf8mb4 NULL,
  copies INT NULL,
  PRIMARY KEY (at, id),
  KEY event_idx (event_id, at),
  KEY outcome_idx (outcome, at, id)
) ENGINE=InnoDB;
