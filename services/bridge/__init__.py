"""HTTP/JSON bridge: a thin gRPC client of the fusion gateway and the indexer."""
