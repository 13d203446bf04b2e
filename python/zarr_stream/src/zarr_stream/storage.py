"""Where a store's objects come from, and reads of one object version (packages/spec/docs/consistent-reads.md).

A store is a local directory or an ``s3://bucket/prefix`` URL. Every read of one shard object within one
read (its index, then its bodies) comes from one version of it:

- local files: the first read opens the file and every later read of that key in the read uses the same
  descriptor (``os.pread``); a writer's rename-replace leaves the open inode intact;
- S3 (obstore): the first answer's ETag rides as ``If-Match`` on every later GET of the key; a 412 or 404
  means the object was replaced, and the read starts again (``ObjectChanged``, then ``TornRead`` after
  ``READ_ATTEMPTS`` attempts that each lost to a rewrite).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import Buffer, BufferPrototype

from .errors import ObjectChanged, SchemaError, StoreError, TornRead

READ_ATTEMPTS = 5
T = TypeVar("T")


class PinnedObject(ABC):
    """Reads of one version of one object: the first read that finds it pins that version."""

    @abstractmethod
    def read(self, byte_range: ByteRequest | None) -> bytes | None:
        """Bytes of the pinned version (None when the object was absent at the first read)."""

    def close(self) -> None:  # noqa: B027 (a no-op by default)
        """Releases what the pin holds."""


class ObjectStore(ABC):
    """The objects of one store, read-only: what read-back and the xarray backend need."""

    url: str

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The whole object, or None when absent."""

    @abstractmethod
    def pin(self, key: str) -> PinnedObject:
        """A pin of `key`'s version, taken at its first read."""

    def read_consistent(self, fn: Callable[[PinnedZarrStore], T]) -> T:
        """Runs `fn` over a fresh pinning zarr store; again when an object changed under it."""
        for _ in range(READ_ATTEMPTS):
            scope = PinnedZarrStore(self)
            try:
                return fn(scope)
            except ObjectChanged:
                continue
            except BaseExceptionGroup as group:
                # zarr-python reads chunks in a task group: a changed shard arrives wrapped.
                if group.subgroup(ObjectChanged) is None:
                    raise
                continue
            finally:
                scope.release()
        raise TornRead(f"{self.url}: a shard was replaced during each of {READ_ATTEMPTS} attempts to read it")


def _bounds(size: int, byte_range: ByteRequest | None) -> tuple[int, int]:
    if byte_range is None:
        return 0, size
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(byte_range.end, size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(size - byte_range.suffix, 0), size
    raise SchemaError(f"unknown byte range {byte_range!r}")


class _LocalPin(PinnedObject):
    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None
        self._absent = False

    def read(self, byte_range: ByteRequest | None) -> bytes | None:
        if self._absent:
            return None
        if self._fd is None:
            try:
                self._fd = os.open(self._path, os.O_RDONLY)
            except FileNotFoundError:
                self._absent = True
                return None
        start, end = _bounds(os.fstat(self._fd).st_size, byte_range)
        out = os.pread(self._fd, end - start, start) if end > start else b""
        if len(out) != end - start:
            raise StoreError(f"{self._path}: short read")
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class LocalStore(ObjectStore):
    """A store in a local directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.url = self.root.as_uri()

    def _path(self, key: str) -> Path:
        if key.startswith("/") or any(p in ("", ".", "..") for p in key.split("/")):
            raise SchemaError(f"{key!r} is not a store key")
        return self.root / key

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def pin(self, key: str) -> PinnedObject:
        return _LocalPin(self._path(key))


class _S3Pin(PinnedObject):
    def __init__(self, store: S3Store, key: str) -> None:
        self._store = store
        self._key = key
        self._etag: str | None = None
        self._absent = False

    def read(self, byte_range: ByteRequest | None) -> bytes | None:
        import obstore
        from obstore.exceptions import NotFoundError, PreconditionError

        if self._absent:
            return None
        opts: dict[str, Any] = {}
        if isinstance(byte_range, RangeByteRequest):
            if byte_range.end > byte_range.start:
                opts["range"] = (byte_range.start, byte_range.end)
            else:
                # An HTTP range cannot be empty: an empty read asks only whether the version is there.
                opts["head"] = True
        elif isinstance(byte_range, OffsetByteRequest):
            opts["range"] = {"offset": byte_range.offset}
        elif isinstance(byte_range, SuffixByteRequest):
            opts["range"] = {"suffix": byte_range.suffix}
        if self._etag is not None:
            opts["if_match"] = self._etag
        try:
            got = obstore.get(self._store.client, self._store.object_key(self._key), options=opts)
        except (NotFoundError, FileNotFoundError):
            if self._etag is not None:
                raise ObjectChanged(f"{self._key} was deleted during a read of one version") from None
            self._absent = True
            return None
        except PreconditionError:
            raise ObjectChanged(f"{self._key} was replaced during a read of one version") from None
        etag = got.meta.get("e_tag")
        if self._etag is None:
            self._etag = etag
        elif etag is not None and etag != self._etag:
            raise ObjectChanged(f"{self._key}: answered with ETag {etag}, pinned {self._etag}")
        return b"" if opts.get("head") else bytes(got.bytes())


class S3Store(ObjectStore):
    """An ``s3://bucket/prefix`` store read through obstore (packages/spec/docs/python-package.md says why)."""

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        from obstore.store import S3Store as _ObS3

        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise SchemaError(f"{url} is not an s3://bucket[/prefix] URL")
        self.url = url.rstrip("/")
        self.bucket = parsed.netloc
        self.prefix = unquote(parsed.path.strip("/"))
        opts = dict(storage_options or {})
        env = os.environ
        endpoint = opts.pop("endpoint_url", None) or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        config: dict[str, Any] = {}
        if endpoint:
            config["endpoint"] = endpoint
        key = opts.pop("key", None) or opts.pop("access_key_id", None) or env.get("AWS_ACCESS_KEY_ID")
        secret = opts.pop("secret", None) or opts.pop("secret_access_key", None) or env.get("AWS_SECRET_ACCESS_KEY")
        token = opts.pop("token", None) or opts.pop("session_token", None) or env.get("AWS_SESSION_TOKEN")
        region = opts.pop("region", None) or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        if key and secret:
            config["access_key_id"] = key
            config["secret_access_key"] = secret
            if token:
                config["session_token"] = token
        if opts.pop("anon", False):
            config["skip_signature"] = True
        config["region"] = region
        # S3-compatible servers (moto, versitygw, MinIO) answer path-style requests.
        config["virtual_hosted_style_request"] = bool(opts.pop("virtual_hosted_style", False))
        if opts:
            raise SchemaError(f"unknown storage_options for {url}: {sorted(opts)}")
        client_options = {"allow_http": True} if endpoint and endpoint.startswith("http://") else None
        self.client = _ObS3(self.bucket, config=config, client_options=client_options)

    def object_key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def get(self, key: str) -> bytes | None:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            return bytes(obstore.get(self.client, self.object_key(key)).bytes())
        except (NotFoundError, FileNotFoundError):
            return None

    def pin(self, key: str) -> PinnedObject:
        return _S3Pin(self, key)


def open_store(store: str | os.PathLike[str] | ObjectStore, storage_options: Mapping[str, Any] | None = None) -> ObjectStore:
    """A store from a local path, a ``file://`` URL, an ``s3://bucket/prefix`` URL, or an ObjectStore."""
    if isinstance(store, ObjectStore):
        return store
    text = os.fspath(store)
    if text.startswith("s3://"):
        return S3Store(text, storage_options)
    if storage_options:
        raise SchemaError(f"storage_options apply to s3:// stores only, not {text}")
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    elif "://" in text:
        raise SchemaError(f"{text}: only local paths, file:// and s3:// URLs are supported")
    return LocalStore(text)


class PinnedZarrStore(Store):
    """A read-only zarr-python store over an ObjectStore in which each key is read from one version."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = False

    def __init__(self, objects: ObjectStore) -> None:
        super().__init__(read_only=True)
        self._objects = objects
        self._pins: dict[str, PinnedObject] = {}

    def release(self) -> None:
        for p in self._pins.values():
            p.close()
        self._pins.clear()

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def _read(self, key: str, byte_range: ByteRequest | None) -> bytes | None:
        pin = self._pins.get(key)
        if pin is None:
            pin = self._pins[key] = self._objects.pin(key)
        return pin.read(byte_range)

    async def get(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None) -> Buffer | None:
        data = self._read(key, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return [await self.get(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        return self._read(key, RangeByteRequest(0, 0)) is not None

    async def set(self, key: str, value: Buffer) -> None:
        raise StoreError("zarr-stream read-back never writes")

    async def delete(self, key: str) -> None:
        raise StoreError("zarr-stream read-back never deletes")

    def list(self) -> AsyncIterator[str]:
        raise StoreError("zarr-stream read-back does not list")

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        raise StoreError("zarr-stream read-back does not list")

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        raise StoreError("zarr-stream read-back does not list")
