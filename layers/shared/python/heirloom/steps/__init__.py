"""One module per Lambda function (`functions/<name>` -> `steps/<name>.py`), each with one
`run(input_model, services) -> output_model` that its handler calls."""
