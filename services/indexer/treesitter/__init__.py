"""Tree-sitter based chunking (Python, JavaScript, TypeScript, Go, Java, Rust) and code-graph
extraction (JavaScript, TypeScript, Go, Java, Rust; Python's graph comes from `ast`)."""
