"""How a question is read: `read(question, corpus) -> Reading`, its kind and the relation of code
it asks for. The gateway reads each question once and passes the reading to the graph leg.

- `reading`: the entry point, and the kinds (structural, identifier, natural, mixed);
- `families`: the phrasing families, ways English asks for one relation, written as data;
- `learned`: the learned reader that checks the families and reads what they miss;
- `words`: the words questions are made of, and which words are names;
- `spelling`: mistyped relation words.
"""

from tribrid.question.families import Intent
from tribrid.question.reading import QueryKind, Reading, read

__all__ = ["Intent", "QueryKind", "Reading", "read"]
