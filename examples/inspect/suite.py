"""A two-task Inspect AI suite (and one task that raises), for the example
campaign and runboard's tests. Each cell of the campaign runs one task of this
file for one model: `inspect eval suite.py@<task> --model openai/<model>`."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import accuracy, match, scorer
from inspect_ai.solver import generate


@task
def arithmetic():
    """Six sums; the answer is the number after `ANSWER:`."""
    pairs = [(2, 3), (12, 7), (40, 2), (9, 9), (15, 16), (21, 22)]
    return Task(
        dataset=[
            Sample(input=f"What is {a} + {b}? Reply as ANSWER: <n>", target=str(a + b), id=i + 1)
            for i, (a, b) in enumerate(pairs)
        ],
        solver=generate(),
        scorer=match(location="end"),
    )


@task
def reverse():
    """Six words to spell backwards."""
    words = ["stone", "lamp", "garden", "river", "window", "cat"]
    return Task(
        dataset=[Sample(input=f"Reverse the word: {w}", target=w[::-1], id=i + 1) for i, w in enumerate(words)],
        solver=generate(),
        scorer=match(location="end"),
    )


@scorer(metrics=[accuracy()])
def broken_grader():
    async def score(state, target):
        raise ValueError("the grader cannot read this answer")

    return score


@task
def broken():
    """An eval that fails: its scorer raises (the cell fails with Inspect's reason)."""
    return Task(dataset=[Sample(input="What is 1 + 1?", target="2")], solver=generate(), scorer=broken_grader())
