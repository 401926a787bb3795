"""Input limits of the REST contract, shared by the API and the services."""

from datetime import date

MAX_BODY_BYTES = 1024 * 1024
MAX_QUERY_CHARS = 4000
MAX_SECTION_ID_CHARS = 512
MAX_SECTIONS_PER_UPSERT = 1000
MAX_SECTION_TEXT_CHARS = 200_000
MAX_STEPS = 100
MAX_CITED = 100
MAX_RETURNED_PER_STEP = 200
MIN_BUDGET_TOKENS = 1
MAX_BUDGET_TOKENS = 100_000
MAX_SUBJECT_CHARS = 200
MAX_ANSWER_CHARS = 50_000
# Dates the service takes as bounds (the API's input matrix, an export's since/until): far enough
# from the ends of the calendar that a bare date's "through that day" (+1 day) and a time zone
# offset never overflow.
MIN_DATE = date(1900, 1, 1)
MAX_DATE = date(9998, 12, 31)
