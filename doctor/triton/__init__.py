"""The model of Triton: what the server makes of a repository and what it reports about itself.

The config schema and its parser, the server's normalisation and defaults, backends'
auto-complete, release profiles, where a field sits in config.pbtxt, and the views the rules
read (``repository_model``, ``server_model``, ``metrics_model``). Collectors and rules both
depend on this package; it depends on neither (see docs/architecture.md).
"""


class SchemaUnavailable(RuntimeError):
    """tritonclient (which carries the ModelConfig schema) is not installed. Declared here, not
    beside the schema, so that the command line catches it without loading the schema's
    module."""
