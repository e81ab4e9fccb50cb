from hindsight_cli.app import app

app(prog_name="python -m hindsight_cli")
