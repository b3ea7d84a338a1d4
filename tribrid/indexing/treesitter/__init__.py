"""Tree-sitter based chunking and code-graph extraction for JavaScript, TypeScript, Go, Java and Rust."""
