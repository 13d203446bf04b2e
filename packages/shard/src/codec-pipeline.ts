import { SchemaError, type TypedArray, UnsupportedCodec } from "@zarr-stream/spec";
import type {
  ArrayToArrayCodec,
  ArrayToBytesCodec,
  BytesToBytesCodec,
  ChunkPipeline,
  ChunkSpec,
  CodecContext,
} from "./codec-model.js";
import { codecFactory } from "./codec-registry.js";
import { isRecord } from "./codecs/config.js";

function fail(document: string, pointer: string, reason: string): never {
  throw new SchemaError(`${document}: ${pointer}: ${reason}`, pointer, document);
}

/**
 * Builds the pipeline a `codecs` list describes for chunks of `spec`, checking the order Zarr v3 requires
 * (array→array*, one array→bytes, bytes→bytes*) and each codec's configuration before any chunk is read.
 * A codec we do not have is UnsupportedCodec naming it; a malformed list or configuration is SchemaError.
 */
export function buildPipeline(
  codecs: unknown,
  spec: ChunkSpec,
  pointer: string,
  document: string,
): ChunkPipeline {
  if (!Array.isArray(codecs) || codecs.length === 0)
    fail(document, pointer, "must be a non-empty array of codecs");
  const arrayToArray: ArrayToArrayCodec[] = [];
  const bytesToBytes: BytesToBytesCodec[] = [];
  let arrayToBytes: ArrayToBytesCodec | undefined;
  /** Specs reaching each array→array codec, then the serialiser. */
  const specs: ChunkSpec[] = [spec];
  codecs.forEach((meta, i) => {
    const at = `${pointer}/${i}`;
    if (!isRecord(meta) || typeof meta.name !== "string")
      fail(document, at, "must be {name, configuration?}");
    const cfg = meta.configuration ?? {};
    if (!isRecord(cfg)) fail(document, `${at}/configuration`, "must be an object");
    const context: CodecContext = {
      spec: specs.at(-1)!,
      pointer: at,
      document,
      pipeline: (list, inner, where) => buildPipeline(list, inner, where, document),
    };
    const codec = codecFactory(meta.name, at, document)(cfg, context);
    if (codec.kind === "array_to_array") {
      if (arrayToBytes !== undefined)
        fail(document, at, `array→array codec "${codec.name}" after the array→bytes codec`);
      arrayToArray.push(codec);
      specs.push(codec.encodedSpec(context.spec));
    } else if (codec.kind === "array_to_bytes") {
      if (arrayToBytes !== undefined) fail(document, at, `a second array→bytes codec ("${codec.name}")`);
      arrayToBytes = codec;
    } else {
      if (arrayToBytes === undefined)
        fail(document, at, `bytes→bytes codec "${codec.name}" before the array→bytes codec`);
      bytesToBytes.push(codec);
    }
  });
  if (arrayToBytes === undefined)
    fail(document, pointer, "has no array→bytes codec (bytes or sharding_indexed)");
  const serialiser = arrayToBytes;
  const serialised = specs.at(-1)!;
  /** The length each bytes→bytes codec decodes to, when fixed: lengths[i] enters codec i on encode. */
  const lengths: (number | undefined)[] = [serialiser.encodedLength(serialised)];
  bytesToBytes.forEach((c, i) => {
    if (c.needsDecodedLength && lengths[i] === undefined) {
      const at = `${pointer}/${arrayToArray.length + 1 + i}`;
      throw new UnsupportedCodec(
        `${document}: ${at}: "${c.name}" after a codec whose output length varies (its frames need not state their length)`,
        c.name,
        at,
        document,
      );
    }
    lengths.push(c.encodedLength(lengths[i]));
  });

  return {
    spec,
    arrayToArray,
    arrayToBytes: serialiser,
    bytesToBytes,
    encodedLength: () => lengths.at(-1),
    async encode(data: TypedArray) {
      let array = data;
      arrayToArray.forEach((c, i) => {
        array = c.encode(array, specs[i]!);
      });
      let bytes = await serialiser.encode(array, serialised);
      for (const c of bytesToBytes) bytes = await c.encode(bytes);
      return bytes;
    },
    async decode(bytes: Uint8Array, key: string) {
      let b = bytes;
      for (let i = bytesToBytes.length - 1; i >= 0; i--)
        b = await bytesToBytes[i]!.decode(b, lengths[i], key);
      let array = await serialiser.decode(b, serialised, key);
      for (let i = arrayToArray.length - 1; i >= 0; i--) array = arrayToArray[i]!.decode(array, specs[i]!);
      return array;
    },
  };
}
