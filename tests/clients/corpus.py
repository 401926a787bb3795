"""The small corpus the client, MCP and adapter tests share."""

# A small corpus shared by the client, MCP and adapter tests (ids hold "/", "#" and ":").
SECTIONS = {
    "guide/install.md#linux": "On Linux, run apt install acme-sync. The service starts automatically.",
    "guide/install.md#windows": "On Windows, run the installer AcmeSyncSetup.exe and follow the wizard.",
    "guide/account.md#reset-password": "To reset your password, choose Forgot password on the sign-in page.",
    "faq:conflicts": "When a file changes on two devices, Acme Sync keeps both copies and renames one.",
}
