-- The dead letters of mysqlDeadLetterStore (createDeadLetterTableSql('payhooks_dead_letters')).
CREATE TABLE IF NOT EXISTS `payhooks_dead_letters` (
  event_id VARBINARY(512) NOT NULL PRIMARY KEY,
  event_type VARBINARY(1024) NOT NULL,
  body LONGBLOB NOT NULL,
  headers LONGTEXT CHARACTER SET utf8mb4 NOT NULL,
  code VARCHAR(32) CHARACTER SET ascii NOT NULL,
  reason TEXT CHARACTER SET utf8mb4 NOT NULL,
  created_at BIGINT NULL,
  first_parked_at BIGINT NOT NULL,
  parked_at BIGINT NOT NULL,
  park_count INT NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  replayed_at BIGINT NULL,
  KEY list_idx (status, parked_at, event_id),
  KEY code_idx (status, code, parked_at, event_id),
  KEY type_idx (status, event_type, parked_at, event_id),
  KEY sweep_idx (status, replayed_at),
  KEY created_idx (status, created_at)
) ENGINE=InnoDB;
