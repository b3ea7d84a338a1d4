"""Which typed relations a question names, outside the names it was seeded by."""

from __future__ import annotations

import json

from services.graph.relation_words import QuestionTerms, relation_terms


def props(**values: object) -> str:
    return json.dumps(values, ensure_ascii=False, sort_keys=True)


def test_an_english_question_names_a_relation_by_a_property_word_or_its_type() -> None:
    asked = QuestionTerms.of("Who is Mme. Coquenard's husband?", ["Madame Coquenard", "Mme Coquenard"])
    assert asked.names("family_of", props(kind="husband"))
    assert not asked.names("family_of", props(kind="godfather"))
    assert not asked.names("partner_of", props(type="married"))
    members = QuestionTerms.of("Which MEMBERS of the Musketeers fought?", ["Athos"])
    assert members.names("member_of", "")  # the type's word, by stem and case-folded
    assert QuestionTerms.of("Who is Milady's brother-in-law?", ["Milady"]).names(
        "family_of", props(kind="brother-in-law")
    )


def test_short_words_stop_words_and_other_values_name_nothing() -> None:
    asked = QuestionTerms.of("Who is b of the group?", [])
    assert not asked.names("family_of", props(source_type="b", strength=0.9, resolved=False))
    assert not asked.names("located_in", props(context="of"))
    assert relation_terms("enemy_of", props(resolved=False, strength=0.5)).phrases == {frozenset({"enemi"})}


def test_a_property_names_a_relation_only_with_all_its_words() -> None:
    minister = props(role="first minister")
    assert not QuestionTerms.of("The king meets the Gascon for the first time", []).names("serves", minister)
    assert QuestionTerms.of("Who is the king's first minister?", []).names("serves", minister)


def test_a_chinese_question_names_a_relation_by_a_run_of_its_properties() -> None:
    asked = QuestionTerms.of("王熙凤的丈夫是谁", ["王熙凤", "凤姐"])
    assert asked.names("partner_of", props(label="夫/妻", type="婚配"))
    assert not asked.names("family_of", props(label="父/子", kind="父"))
    assert QuestionTerms.of("贾蓉的父亲是谁", ["贾蓉"]).names("family_of", props(label="父/子"))


def test_a_seeds_own_name_names_no_relation() -> None:
    # 贾母 holds 母, and "Lackey Jones" holds lackey: both are the seed's name, not a relation asked for
    assert not QuestionTerms.of("贾母住在哪里", ["贾母", "老太太"]).names("family_of", props(kind="母"))
    assert not QuestionTerms.of("Where does Lackey Jones live?", ["Lackey Jones"]).names(
        "serves", props(role="lackey")
    )
    assert QuestionTerms.of("Whose lackey is Planchet?", ["Planchet"]).names("serves", props(role="lackey"))


def test_accented_words_match_folded() -> None:
    assert QuestionTerms.of("Wer ist der Bürgermeister von Zürich?", ["Zürich"]).names(
        "leader_of", props(role="Burgermeister")
    )
