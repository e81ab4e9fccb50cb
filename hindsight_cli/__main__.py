from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

from hindsight_cli.app import app  # noqa: E402

app(prog_name="python -m hindsight_cli")
