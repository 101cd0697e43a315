"""The compiled runtime: the validated solve in C (docs/COMPILED.md)."""
