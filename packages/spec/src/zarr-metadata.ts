/**
 * Zarr v3 node metadata (`zarr.json`) as the Zarr v3 core specification states it: the wire types here,
 * their JSON Schemas in schemas/zarr.ts. Shape only: which codecs, data types and grids an
 * implementation understands is its own business (@zarr-stream/shard refuses the rest by name).
 */

/** An extension point's value: a name and its configuration (a codec, chunk grid or key encoding). */
export interface ZarrNamedConfig {
  name: string;
  configuration?: Record<string, unknown>;
  /** Extensions an implementation may ignore say so (Zarr v3.1); absent means it must understand it. */
  must_understand?: boolean;
}

/** A codec in an array's (or a sharding codec's) pipeline. */
export type ZarrCodecMetadata = ZarrNamedConfig;

/** A fill value: a number, a special float spelling ("NaN", "Infinity", "0x7fc00000"), or a composite. */
export type ZarrFillValue = number | string | boolean | null | (number | string)[];

/** An array's `zarr.json`. */
export interface ZarrArrayMetadata {
  zarr_format: 3;
  node_type: "array";
  shape: number[];
  /** A core data type name ("float64", "int32", ...) or an extension data type. */
  data_type: string | ZarrNamedConfig;
  chunk_grid: ZarrNamedConfig;
  chunk_key_encoding: ZarrNamedConfig;
  fill_value: ZarrFillValue;
  codecs: ZarrCodecMetadata[];
  attributes?: Record<string, unknown>;
  dimension_names?: (string | null)[];
  storage_transformers?: ZarrNamedConfig[];
}

/** A group's `zarr.json`. */
export interface ZarrGroupMetadata {
  zarr_format: 3;
  node_type: "group";
  attributes?: Record<string, unknown>;
}
