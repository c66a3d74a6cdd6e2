"""LATS-RCA: reflection-guided Monte-Carlo tree search over metrics, logs and traces."""
