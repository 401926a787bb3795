"""Synthetic but natural-ish text for the benchmark: product documentation sections and the
questions agents ask about them, from templates × vocabulary lists (nothing downloaded).

Each tenant documents one product: two sections per feature (overview and troubleshooting).
A question is (frame, task phrasing, product, context); its paraphrase keeps the feature,
product and context but changes the frame and the task phrasing."""

from __future__ import annotations

import random
from dataclasses import dataclass

PRODUCTS = [
    "Acme Sync", "Nimbus Drive", "Ledgerly", "Parcelpost", "Beacon CRM", "Orbit Chat", "Quill Notes",
    "Harbor VPN", "Pixelforge", "Tally Payroll", "Relay Mail", "Summit Tasks",
]

# (feature slug, three task phrasings, overview text, troubleshooting text); {p} = product.
FEATURES: list[tuple[str, list[str], str, str]] = [
    ("password", ["reset my password", "change a forgotten password", "recover my account after losing the password"],
     "To reset your password in {p}, choose Forgot password on the sign-in page. We email a link that is valid "
     "for one hour. Resetting the password signs you out on every device.",
     "If the reset email does not arrive, check the spam folder and make sure the address matches your {p} "
     "account. Links expire after one hour; request a new one if it has expired."),
    ("two-factor", ["turn on two-factor authentication", "enable 2FA", "add an authenticator app to my login"],
     "Two-factor authentication in {p} adds a code from an authenticator app to every sign-in. Turn it on under "
     "Account, Security. Keep the recovery codes somewhere safe.",
     "Lost your phone? Sign in to {p} with one of your recovery codes, then disable and re-enable two-factor "
     "authentication to register the new device."),
    ("delete-account", ["delete my account", "close my account permanently", "remove all my data and cancel"],
     "To delete your {p} account, open Account, choose Delete account and confirm with your password. Data is "
     "removed from our servers within 30 days. This cannot be undone.",
     "Account deletion in {p} fails while a paid subscription is active. Cancel the subscription first, wait "
     "for the billing period to end, then delete the account."),
    ("export", ["export my data", "download a copy of everything", "get a CSV export of my records"],
     "{p} exports your data as CSV or JSON. Open Settings, choose Export and pick the format. Large exports "
     "are prepared in the background and emailed as a download link.",
     "An export link in {p} is valid for seven days. If the export is stuck, check that it has fewer than one "
     "million rows or split it by date range."),
    ("import", ["import data from a spreadsheet", "upload my existing records", "migrate data from another tool"],
     "To import into {p}, open Settings, choose Import and upload a CSV file with a header row. Columns are "
     "matched by name; unmatched columns can be mapped by hand.",
     "Imports into {p} stop at the first row with an invalid date. Use ISO dates (2024-05-31) and UTF-8 "
     "encoding, then upload the file again."),
    ("billing-plans", ["compare the pricing plans", "find out what the Pro plan costs", "choose between plans"],
     "{p} offers Free, Pro and Business plans. Pro adds priority support and more storage; Business adds single "
     "sign-on and audit logs. Yearly billing saves two months.",
     "Plan changes in {p} take effect immediately and are prorated. Downgrading keeps your data but disables "
     "features that the smaller plan does not include."),
    ("invoices", ["download an invoice", "get a receipt for my payment", "find past invoices"],
     "Invoices for {p} are under Billing, Invoices. Each invoice can be downloaded as a PDF and lists the VAT "
     "number entered in your billing details.",
     "To add a VAT number or company address to {p} invoices, edit Billing details; only invoices issued after "
     "the change include it."),
    ("refund", ["ask for a refund", "get my money back", "cancel and be reimbursed"],
     "{p} refunds yearly plans within 14 days of purchase. Contact support from the Help menu with the invoice "
     "number. Monthly plans are not refunded but can be cancelled at any time.",
     "Refunds from {p} reach your card within five to ten business days, depending on the bank."),
    ("invite", ["invite a colleague", "add a team member", "share access with my coworkers"],
     "To invite people to {p}, open Team, choose Invite and enter their email addresses. Invitations expire "
     "after seven days. Each member uses one seat of your plan.",
     "If an invited colleague cannot join {p}, check that the invitation has not expired and that your plan "
     "has a free seat."),
    ("roles", ["change someone's permissions", "make a user an admin", "restrict what members can see"],
     "{p} has three roles: owner, admin and member. Admins manage members and settings; members use the product. "
     "Change a role under Team, Members.",
     "Only an owner can make someone else owner in {p}. An account always keeps at least one owner."),
    ("sso", ["set up single sign-on", "connect our identity provider", "log in with SAML"],
     "Single sign-on for {p} supports SAML 2.0 and OpenID Connect on the Business plan. Enter your identity "
     "provider's metadata under Security, Single sign-on.",
     "When SSO login to {p} fails with an audience error, check that the entity ID in your identity provider "
     "matches the one shown in {p}."),
    ("notifications", ["turn off email notifications", "stop getting so many alerts", "change notification settings"],
     "Notification settings in {p} are under Settings, Notifications. Choose email, push or none for each kind "
     "of event. Security alerts cannot be turned off.",
     "If {p} notifications stopped arriving, check the do-not-disturb schedule and that the browser allows "
     "notifications for the site."),
    ("offline", ["work offline", "use the app without internet", "access files with no connection"],
     "{p} keeps recently used items available offline. Changes made offline are synced when the device "
     "reconnects. Mark an item as Available offline to keep it on the device.",
     "Offline changes in {p} that conflict with changes made elsewhere are kept as a copy with the suffix "
     "(conflict), so nothing is lost."),
    ("mobile", ["install the mobile app", "use it on my phone", "get the iOS or Android app"],
     "The {p} mobile app is available for iOS 16 and Android 11 or later. Sign in with the same account; "
     "settings and data sync across devices.",
     "If the {p} app crashes on start, update it from the app store and restart the phone. Older Android "
     "versions are not supported."),
    ("api", ["use the API", "create an API token", "automate things with the REST API"],
     "{p} has a REST API. Create a token under Settings, Developer; tokens carry the permissions of the user "
     "who created them. Requests are limited to 600 per minute.",
     "API requests to {p} answered with 429 exceeded the rate limit; wait for the number of seconds in the "
     "Retry-After header."),
    ("webhooks", ["set up a webhook", "get notified of changes by HTTP", "send events to my server"],
     "Webhooks in {p} post a JSON event to your URL when something changes. Add one under Settings, Developer, "
     "Webhooks and verify the signature header with the shared secret.",
     "{p} retries a failed webhook delivery for 24 hours with exponential backoff, then disables the webhook."),
    ("storage", ["check how much storage I use", "free up space", "see my storage quota"],
     "Storage used by {p} is shown under Account, Usage. Items in the trash count until the trash is emptied. "
     "Version history counts towards the quota on the Free plan only.",
     "When {p} storage is full, new uploads are paused. Empty the trash or upgrade the plan to resume."),
    ("search", ["search across all my items", "find something I saved", "use advanced search filters"],
     "Search in {p} covers titles, content and comments. Use quotes for exact phrases and filters such as "
     "owner:me or type:pdf to narrow results.",
     "New items appear in {p} search within a minute. Attachments larger than 50 MB are not indexed."),
    ("sharing", ["share a link with someone outside", "make a public link", "send a file to a client"],
     "Share items from {p} with a link: choose Share, then Copy link. Links can require a password and can "
     "expire on a date you choose.",
     "Public links in {p} can be disabled by an admin for the whole team under Security, Sharing."),
    ("history", ["restore an older version", "undo changes from last week", "see the version history"],
     "{p} keeps a version history for every item: 30 days on the Free plan and one year on paid plans. Open "
     "the item, choose History and restore any version.",
     "Restoring a version in {p} creates a new version; the current one stays in the history."),
    ("language", ["change the interface language", "switch to French", "set my language and time zone"],
     "The {p} interface language and time zone are set under Profile, Preferences. Dates and numbers follow "
     "the language you choose.",
     "If {p} still shows the old language, sign out and back in; the mobile app follows the phone's language."),
    ("integrations", ["connect to Slack", "integrate with Google Drive", "link my calendar"],
     "{p} integrates with Slack, Google Drive, Microsoft Teams and calendar apps. Connect them under Settings, "
     "Integrations; each integration asks for its own permissions.",
     "An integration in {p} that stopped working usually needs to be reconnected after a password change."),
    ("audit-log", ["see who changed something", "view the audit log", "track user activity"],
     "The {p} audit log records sign-ins, permission changes and deletions. Admins on the Business plan can "
     "filter it by user and date and export it as CSV.",
     "Audit log entries in {p} are kept for one year; export them regularly if you need a longer record."),
    ("bandwidth", ["limit upload speed", "reduce bandwidth usage", "throttle the sync"],
     "To limit bandwidth in {p}, open Settings, Network and set upload and download limits in kilobytes per "
     "second. Limits apply to every account on the device.",
     "A proxy between {p} and the internet can slow syncing; configure it under Settings, Network, Proxy."),
]

FRAMES = [
    "How do I {t} in {p}{c}?", "What is the way to {t} with {p}{c}?", "Can I {t}{c}?",
    "Is it possible to {t} in {p}{c}?", "Steps to {t} in {p}{c}", "I need to {t}{c}, how?",
    "Where can I {t} in {p}?", "{p}: how to {t}{c}", "Help me {t} in {p}{c}",
    "What's the fastest way to {t}{c}?", "Why can't I {t} in {p}{c}?", "Is there a setting to {t}{c}?",
]

CONTEXTS = [
    "", " on my iPhone", " for my whole team", " as an admin", " on Windows", " on a Mac", " from the web app",
    " on the Free plan", " on the Business plan", " without losing data", " for a client", " on Android",
]

# Off-topic questions: recalls that must miss.
MISS_TASKS = [
    "bake sourdough bread", "train for a marathon", "repot a fern", "learn to play the cello", "tune a bicycle",
    "brew cold coffee", "fold a fitted sheet", "plant tomatoes in spring", "remove a red wine stain",
    "choose hiking boots", "knit a scarf", "clean a cast iron pan",
]
MISS_FRAMES = ["How do I {t}?", "What is the best way to {t}?", "Any tips to {t} quickly?",
               "Is it hard to {t} at home?"]


@dataclass(frozen=True)
class Question:
    text: str
    feature: int  # index into FEATURES
    paraphrase: str


def section_ids(feature: int) -> tuple[str, str]:
    slug = FEATURES[feature][0]
    return f"docs/{slug}.md#overview", f"docs/{slug}.md#troubleshooting"


def section_texts(product: str) -> dict[str, str]:
    """A tenant's documentation: two sections per feature, keyed by external id."""
    out: dict[str, str] = {}
    for i, (_, _, overview, trouble) in enumerate(FEATURES):
        a, b = section_ids(i)
        out[a] = overview.format(p=product)
        out[b] = trouble.format(p=product)
    return out


def question(rng: random.Random, product: str, feature: int | None = None) -> Question:
    """A question about the product and its paraphrase (other frame, other task phrasing)."""
    if feature is None:
        feature = rng.randrange(len(FEATURES))
    tasks = FEATURES[feature][1]
    t1, t2 = rng.sample(range(len(tasks)), 2)
    f1, f2 = rng.sample(range(len(FRAMES)), 2)
    ctx = rng.choice(CONTEXTS)
    text = FRAMES[f1].format(t=tasks[t1], p=product, c=ctx)
    para = FRAMES[f2].format(t=tasks[t2], p=product, c=ctx)
    return Question(text=text, feature=feature, paraphrase=para)


def miss_question(rng: random.Random) -> str:
    return rng.choice(MISS_FRAMES).format(t=rng.choice(MISS_TASKS))
