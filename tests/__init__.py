from pathlib import Path

# The source checkout the tests run from.
REPO_ROOT = Path(__file__).resolve().parent.parent
# The fixture files (sample repository, documents, languages) every kind of test reads.
FIXTURES = REPO_ROOT / "tests" / "fixtures"
