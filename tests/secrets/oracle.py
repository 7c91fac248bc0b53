"""detect-secrets as an oracle: reads a JSON list of texts on stdin and
writes, for each, the secrets detect-secrets finds in it, each as its line
(from 1) and its value:
every plugin on, its default filters, each line read as it reads a line of
a file (`detect-secrets scan` of a file of that one text). Not its
`--string` mode, whose eager keyword search takes every word of a line
that names a password for one."""

import json
import os
import sys
import tempfile

from detect_secrets.core.secrets_collection import SecretsCollection
from detect_secrets.settings import default_settings


def found(text, scratch):
    path = os.path.join(scratch, "result.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    collection = SecretsCollection(root=scratch)
    collection.scan_file("result.txt")
    return sorted(
        {(secret.line_number, secret.secret_value) for _, secret in collection if secret.secret_value}
    )


def main():
    texts = json.load(sys.stdin)
    with default_settings(), tempfile.TemporaryDirectory() as scratch:
        json.dump([found(text, scratch) for text in texts], sys.stdout)


if __name__ == "__main__":
    main()
