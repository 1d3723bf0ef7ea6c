"""`python -m pos_agent.events > docs/trace-events.schema.json` writes the trace's JSON schema."""

import json

from pos_agent.events import events_json_schema

print(json.dumps(events_json_schema(), indent=2, ensure_ascii=False))
