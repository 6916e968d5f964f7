"""Open documents: text as UTF-8 bytes, LSP position conversion, incremental syntax trees."""
