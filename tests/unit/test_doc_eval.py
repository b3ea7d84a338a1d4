"""Document question sets and their strict / loose judgement (evaluation)."""

from __future__ import annotations

from evaluation.doc_sets import split_perlfaq, split_sedfaq
from evaluation.metrics import Span, is_loose_match, is_strict_match, score_query

ANSWER = Span("faq.txt", 10, 29)  # 20 lines


def test_strict_is_the_answer_loose_is_any_overlap() -> None:
    assert is_strict_match(Span("faq.txt", 10, 29), ANSWER)  # exactly the answer
    assert is_strict_match(Span("faq.txt", 8, 27), ANSWER)  # most of it, little else
    assert is_strict_match(Span("faq.txt", 10, 15), ANSWER)  # its head (a long answer split)
    assert not is_strict_match(Span("faq.txt", 16, 21), ANSWER)  # a middle piece
    assert not is_strict_match(Span("faq.txt", 1, 60), ANSWER)  # a window 3 answers wide
    assert not is_strict_match(Span("other.txt", 10, 29), ANSWER)
    assert is_loose_match(Span("faq.txt", 1, 60), ANSWER) and is_loose_match(Span("faq.txt", 29, 40), ANSWER)
    assert not is_loose_match(Span("faq.txt", 30, 40), ANSWER)


def test_scores_report_both_judgements() -> None:
    hits = [Span("faq.txt", 1, 60), Span("faq.txt", 10, 29)]
    scores = score_query(hits, [ANSWER], strict=is_strict_match)
    assert scores.recall10 == 1.0 and 0 < scores.ndcg10 < 1.0  # found at rank 2
    assert scores.ndcg10_loose == 1.0  # the window at rank 1 overlaps
    assert scores.lines10 == 80


POD = """=head1 NAME

perlfaqX - sample

=head2 How do I read a file line by line?

Use a C<while> loop.

    while (<$fh>) { print }

That is all.

=head2 Short?

See perlfunc.

=head1 AUTHOR
"""


def test_perlfaq_questions_leave_the_indexed_copy() -> None:
    copy, questions = split_perlfaq("perlfaqX.txt", POD)
    assert [q.question for q in questions] == ["How do I read a file line by line?"]
    q = questions[0]
    lines = copy.split("\n")
    assert (q.start_line, q.end_line) == (7, 11)
    assert lines[q.start_line - 1] == "Use a C<while> loop." and lines[q.end_line - 1] == "That is all."
    assert "read a file line by line" not in copy and len(lines) == len(POD.split("\n"))


SED = """CONTENTS
1. GENERAL INFORMATION
2. BASIC SED
2.1. What is sed?

1. GENERAL INFORMATION

1.1. Introduction to the
     FAQ itself

   Text about the FAQ.
   More text.
   Even more.

2. BASIC SED

2.1. What is sed exactly and
     where did it come from?

   sed is a stream editor.
   It reads input line by line.
   It writes to standard output.

2.1.1. A sub-section

   Still the answer.
"""


def test_sedfaq_questions_span_their_subsections_and_the_contents_go() -> None:
    copy, questions = split_sedfaq("sedfaq.txt", SED)
    assert [q.question for q in questions] == ["What is sed exactly and where did it come from?"]
    q = questions[0]
    assert (q.start_line, q.end_line) == (20, 26)
    assert "What is sed" not in copy and "where did it come from" not in copy
    assert "CONTENTS" not in copy and len(copy.split("\n")) == len(SED.split("\n"))
