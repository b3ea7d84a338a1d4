from pathlib import Path

# The source checkout the tests run from.
REPO_ROOT = Path(__file__).resolve().parent.parent
