"""The benchmark behind ``manage.py bench`` (``make bench``): bulk seeding (seed), in-process
timings (timing), the HTTP phase against gunicorn (httpload), the report (report) and one
run putting them together (runner)."""
