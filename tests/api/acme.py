"""The two-section corpus the exemplar tests (negatives, positives) share: a trail's own need,
a close question about its neighbouring section, and a rewording of the trail's question."""

TEXT = {"doc#config": "Set ACME_HOME to move the configuration directory of Acme.",
        "doc#logging": "Logs go to /var/log/acme; set ACME_LOG_DIR to move the log directory."}
QUERY = "How do I move the Acme configuration directory?"
NEAR_MISS = "How do I move the Acme log directory?"
SAME_NEED = "Where do I set which folder Acme keeps its configuration in?"
