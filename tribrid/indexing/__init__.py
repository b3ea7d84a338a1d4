"""Pure, database-free indexing: walk a corpus, chunk its files, extract the Python code graph.

The caller parses each file once: `chunk_file` returns the Python syntax tree it built, and
`extract_python` takes that tree instead of parsing again.
"""
