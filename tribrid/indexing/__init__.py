"""Pure, database-free indexing: walk a corpus, chunk its files (code by definition, documents by
section: `documents`, `doc_chunks`), extract the code graph.

The caller parses each file once: `chunk_file` returns the Python syntax tree it built, and
`extract_python` takes that tree instead of parsing again.
"""
