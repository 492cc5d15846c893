"""The shared logical encoding (persistence.md §3) and verified reads: packed chunk records,
closer and legacy normalization, the logical log, window reads and the verification memo. Every
backend uses these; none re-implements them."""
