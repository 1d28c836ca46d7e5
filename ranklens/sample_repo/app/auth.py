"""User authentication helpers."""

import hashlib


class PasswordHasher:
    """Hash and verify user passwords with a salt."""

    def hash_password(self, password: str, salt: str) -> str:
        """Return the salted sha256 digest of a password."""
        return hashlib.sha256((salt + password).encode()).hexdigest()

    def verify_password(self, password: str, salt: str, digest: str) -> bool:
        return self.hash_password(password, salt) == digest


def login_user(username, password, store):
    """Check the credentials of a user against the store and open a session."""
    record = store.get(username)
    if record is None:
        return None
    if PasswordHasher().verify_password(password, record["salt"], record["digest"]):
        return {"user": username, "session": True}
    return None
