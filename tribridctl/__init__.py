"""The composition of services: the `tribrid` command line, and which services a process runs."""
