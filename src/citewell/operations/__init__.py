"""Online operations on a running data dir: embedding spaces and model switches, moving a
data dir to another database, the consistency check."""
