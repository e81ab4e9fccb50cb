"""The description of a one-person business given in place of the team the answer assumed (detection/own_business.py):
found after such an answer, quoted to the end of the description, and nowhere else."""

from __future__ import annotations

import pytest

from hindsight_insights.detection.own_business import works_alone

TEAM = "One of our engineers can be with you today, and our team covers every appliance."
TEAM_ZH = "您好！我们的技术团队当天收件当天处理，本店支持所有型号。"


@pytest.mark.parametrize(
    ("message", "answer", "description"),
    [
        (
            "It's just me and the van. Fridges only, no ovens. Mondays to Thursdays. Try again.",
            TEAM,
            "It's just me and the van. Fridges only, no ovens. Mondays to Thursdays.",
        ),
        (
            "I work on my own from a shed in Leek, two chairs a month. Redo it?",
            TEAM,
            "I work on my own from a shed in Leek, two chairs a month.",
        ),
        ("店就我一个人，在家里做。只修手表，不修钟。重新回。", TEAM_ZH, "店就我一个人，在家里做。只修手表，不修钟。"),
        # a new point after the description is no part of it
        ("淨係得我一個人，星期二休息。另外，回覆唔好用感嘆號。", TEAM_ZH, "淨係得我一個人，星期二休息。"),
    ],
)
def test_the_description_runs_from_the_words_of_working_alone_to_its_last_statement(
    message: str, answer: str, description: str
) -> None:
    assert works_alone(message, answer) == description


@pytest.mark.parametrize(
    ("message", "answer"),
    [
        # the answer wrote for no team
        ("It's just me and the van, so weekdays only.", "Your washer can be repaired on Tuesday."),
        # no word of working alone
        ("We're three fitters and a van. Try again.", TEAM),
        ("我们店有五个师傅。", TEAM_ZH),
    ],
)
def test_no_description_without_an_answer_for_a_team_or_the_words_of_working_alone(message: str, answer: str) -> None:
    assert works_alone(message, answer) is None
