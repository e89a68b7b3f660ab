"""What cloud-init itself does with user data, by its own code.

Reads a JSON list of base64 user data on stdin; writes a JSON list of
plans: the parts cloud-init's UserDataProcessor makes (type, filename),
what its part handlers leave (boothooks, scripts by directory, the merged
cloud-config) and what the write_files and runcmd modules make of that
configuration. Nothing is executed: the boothook handler records instead
of running, and files are written under a temporary directory.
"""
import base64
import json
import os
import sys
import tempfile

from cloudinit import handlers, helpers, user_data, util
from cloudinit.config import cc_write_files
from cloudinit.handlers.boot_hook import BootHookPartHandler
from cloudinit.handlers.cloud_config import CloudConfigPartHandler
from cloudinit.handlers.shell_script import ShellScriptPartHandler
from cloudinit.handlers.shell_script_by_frequency import ShellScriptByFreqPartHandler
from cloudinit.settings import PER_ALWAYS, PER_INSTANCE, PER_ONCE


class Boothooks(BootHookPartHandler):
    """The boothook handler, which records its script instead of running it."""

    def __init__(self, paths):
        BootHookPartHandler.__init__(self, paths, datasource=None)
        self.boothook_dir = os.path.join(paths.cloud_dir, "boothooks")  # the instance's directory, without one
        self.hooks = []

    def handle_part(self, data, ctype, filename, payload, frequency):
        if ctype in handlers.CONTENT_SIGNALS:
            return
        path = self._write_part(payload, filename)
        with open(path, "rb") as f:
            self.hooks.append({"name": os.path.basename(path), "body": b64(f.read())})


class CloudConfig(CloudConfigPartHandler):
    """The cloud-config handler, which keeps what it merged."""

    def __init__(self, paths):
        CloudConfigPartHandler.__init__(self, paths)
        self.merged = None

    def _write_cloud_config(self):
        self.merged = self.cloud_buf


def b64(data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return base64.b64encode(data).decode()


def scripts_in(path):
    if not os.path.isdir(path):
        return []
    out = []
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out.append({"name": name, "body": b64(f.read())})
    return out


class Recorder:
    """A handler for types whose effect the plan only names."""

    def __init__(self, types):
        self.types = types
        self.handler_version = 2
        self.frequency = PER_ALWAYS
        self.seen = []

    def list_types(self):
        return self.types

    def handle_part(self, data, ctype, filename, payload, frequency):
        if ctype not in handlers.CONTENT_SIGNALS:
            self.seen.append(ctype)


def plan(blob):
    with tempfile.TemporaryDirectory() as tmp:
        paths = helpers.Paths({"cloud_dir": os.path.join(tmp, "cloud"), "run_dir": os.path.join(tmp, "run")})
        msg = user_data.UserDataProcessor(paths).process(blob)
        parts = []
        for part in msg.walk():
            if part.get_content_maintype() == "multipart":
                continue
            parts.append({"type": part.get_content_type(), "filename": part.get_filename() or ""})
        boothooks = Boothooks(paths)
        cloud_config = CloudConfig(paths)
        unmodelled = Recorder(["text/jinja2", "text/part-handler", "text/cloud-config-jsonp"])
        c_handlers = helpers.ContentHandlers()
        for mod in [cloud_config, ShellScriptPartHandler(paths),
                    ShellScriptByFreqPartHandler(PER_ALWAYS, paths),
                    ShellScriptByFreqPartHandler(PER_INSTANCE, paths),
                    ShellScriptByFreqPartHandler(PER_ONCE, paths),
                    boothooks, unmodelled]:
            c_handlers.register(mod, overwrite=False)
        mods = []
        for _, mod in c_handlers.items():
            if mod not in mods:
                mods.append(mod)
        for mod in mods:
            handlers.call_begin(mod, None, PER_INSTANCE)
        data = {"handlers": c_handlers, "handlerdir": os.path.join(tmp, "handlers"), "data": None,
                "frequency": PER_INSTANCE, "handlercount": 0, "excluded": ["text/part-handler"]}
        handlers.walk(msg, handlers.walker_callback, data=data)
        for mod in mods:
            handlers.call_end(mod, None, PER_INSTANCE)
        cfg = cloud_config.merged or {}
        files = []
        error = ""
        write_files = cfg.get("write_files", [])
        try:
            for f in write_files if isinstance(write_files, list) else []:
                if not isinstance(f, dict) or not f.get("path"):
                    continue
                contents = cc_write_files.extract_contents(
                    f.get("content", ""), cc_write_files.canonicalize_extraction(f.get("encoding")))
                files.append({"path": os.path.abspath(f["path"]), "content": b64(contents),
                              "append": util.get_cfg_option_bool(f, "append"),
                              "defer": util.get_cfg_option_bool(f, "defer", False)})
        except Exception as e:  # the module stops at the entry it cannot write
            error = "write_files: %s" % e
        base = os.path.join(tmp, "cloud")
        if "runcmd" in cfg:  # the runcmd module writes its script beside the part scripts
            try:
                util.write_file(os.path.join(base, "instance", "scripts", "runcmd"), util.shellify(cfg["runcmd"]), 0o700)
            except Exception as e:
                error = (error + "; " if error else "") + "runcmd: %s" % e
        return {
            "parts": parts,
            "boothooks": boothooks.hooks,
            "scripts": {
                "per-once": scripts_in(os.path.join(base, "scripts", "per-once")),
                "per-boot": scripts_in(os.path.join(base, "scripts", "per-boot")),
                "per-instance": scripts_in(os.path.join(base, "scripts", "per-instance")),
                "user": scripts_in(os.path.join(base, "instance", "scripts")),
            },
            "merged": sorted(cfg.keys()) if isinstance(cfg, dict) else [],
            "files": files,
            "error": error,
            "unmodelled": unmodelled.seen,
        }


def main():
    import logging
    logging.disable(logging.CRITICAL)
    os.chdir("/")  # cloud-init runs from the root: relative write_files paths are read from there
    out = []
    for blob in json.load(sys.stdin):
        try:
            out.append(plan(base64.b64decode(blob)))
        except Exception as e:
            out.append({"failed": "%s: %s" % (type(e).__name__, e)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
