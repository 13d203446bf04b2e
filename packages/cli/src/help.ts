export const MAIN_HELP = `zstream: streaming, multi-writer Zarr v3 output (zarr-stream)

Usage: zstream <command> [options]
       zstream help [<command>]

Commands:
  demo       simulate a domain-decomposed model run: N writer threads stream into one store
  inspect    show a store's manifest, records (decoded CF times), arrays and uncommitted leftovers
  verify     check a store's committed state (manifest, zarr.json, shards, blobs)
  plot       render a committed 2-D slice (heatmap), 1-D slice or time series (line) to PNG or SVG
  dump       write every committed value as earthsciio/write-v2-dump/v1 JSON
  manifest   manifest pages on|off: keep a v2 store's manifest in the paged form or the seed's
  serve      open the browser viewer on a store (loopback HTTP)
  recover    after a crash: abandon stale runs, clear stale claims, rebuild the snapshot
  conformance, journal, cp
             the conformance corpus, the output journal and the .firecube control plane

Options on every command and subcommand:
  -h, --help   show the command's help
  --version    print zstream's version
  --debug      print the stack trace of an error

Exit codes: 0 ok, 1 check failed or refused, 2 usage error (a path that does not exist, an --out that
cannot be written), 3 store or contract error, 4 internal error. inspect, verify, plot, dump, serve,
cp ... list/show/status and recover --dry-run never create or change anything.

Example:
  zstream demo && zstream inspect /tmp/zstream-demo-XXXX/demo.zarr
`;

export const HELP: Record<string, string> = {
  demo: `Usage: zstream demo [--out DIR] [--writers N] [--records M] [--profile P] [--grid LATxLON] [--commit-every K] [--serve [--no-token]]
       zstream demo --store URL (--procs N | --rank-from-env | --rank I) [--writers N] [--records M] ...

Simulates a domain-decomposed model run on a local store: N writer threads (writer 0 the owner), each
owning a shard-aligned lat x lon block, stream M hourly records of a near-surface temperature field with
an advected warm anomaly, plus a land mask static and a per-writer RNG-state blob. Every K records the
contributors flush and hand their tokens to the owner, which commits. Then the store is read back and
compared bitwise with what was written, verified, and a PNG quicklook is written next to it.

Options:
  --out DIR          store directory, absent or empty (default: a new temp directory)
  --writers N        writer threads (default 4)
  --records M        records to write (default 48)
  --profile P        diagnostic | checkpoint | wasm (default diagnostic)
  --grid LATxLON     grid size (default 180x360)
  --commit-every K   records per commit and per time shard (default 8)
  --json             print the summary as JSON
  --manifest-pages   keep the manifest in the paged form (zstream manifest --help)
  --serve            then open the browser viewer on the demo store (Ctrl-C to stop)
  --no-token         with --serve: serve without the secret token (see zstream serve --help)

Writers as OS processes, on any store URL (s3://bucket/prefix with the AWS_* variables, a path):
  --store URL        write there through the run API (tokens travel through the store)
  --procs N          start N writer processes of this command
  --rank-from-env    be one rank of a launcher: id and count from OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE,
                     SLURM_ARRAY_TASK_ID/COUNT, SLURM_PROCID/NTASKS, or JOB_COMPLETION_INDEX (+ --writers)
  --rank I           be writer I of --writers N
  A restarted rank resumes from the committed state. Writer 0 prints the read-back, verify and quicklook.

Example:
  zstream demo --out /tmp/run.zarr --writers 4 --records 48
  mpirun -n 4 npx zstream demo --store s3://bucket/run --rank-from-env --grid 90x180
`,
  serve: `Usage: zstream serve STORE [--port P] [--no-token]

Serves a small web page and the store's objects over HTTP on 127.0.0.1. The page reads the store in the
browser (wasm codecs) and shows committed data only: a variable picker, a record slider, a heatmap with
colour bar and hover readout, and the commit state; it refreshes when commit_seq changes.

Every request needs a secret token, printed once in the URL shown (http://127.0.0.1:P/?token=...);
the page trades it for a cookie on its first load, other clients send it in the X-Zstream-Token header.
Only the store's own objects are served (zarr.json, output_manifest.json and its pages, chunks and
shards, blobs), never other files under STORE. Idle connections are closed after 30 s.

Options:
  --port P     port to listen on (default: a free port)
  --no-token   no token: any user or process on this machine can read the store (a trusted machine only)

Example:
  zstream serve /tmp/run.zarr --port 8080
`,
  recover: `Usage: zstream recover STORE [--product NAME] [--reason TEXT] [--dry-run] [--json]

Walks the documented recovery order of the .firecube control plane after a crash: abandon stale runs,
clear stale claims, rebuild the snapshot; prints what it did. Confirm the crashed process is dead first.
A fresh (non-stale) claim or run is never touched. STORE must exist and have a control plane (.firecube/):
recover never creates one. --dry-run reports what it would do and changes nothing.
Exit 0 when everything was recovered, 1 when something is left.

Example:
  zstream recover /tmp/run.zarr && zstream cp runs list --store /tmp/run.zarr
`,
  inspect: `Usage: zstream inspect STORE [--json]

Shows the manifest label and commit_seq, writers and region dims, time mode, committed records (count,
first/last time decoded from the time coordinate's CF units and calendar, generations in indexed mode),
statics, blobs, every array (shape, shard and chunk shape, dtype, codec, bytes on disk) and objects
present but not committed (leftovers of a crash). A Zarr v3 store without output_manifest.json (one that
zarr-python or xarray wrote) shows its arrays as stored and its CF time coordinate's range.
With --json an error is also printed on stdout as {"error": {"name", "message", "exit_code"}}.

Example:
  zstream inspect /tmp/run.zarr --json
`,
  verify: `Usage: zstream verify STORE [--json] [--deep]

Validates the manifest and every zarr.json against their schemas and each other, checks that every
committed shard object exists, its index CRC, and that inner chunks decode to the right length (from
their frame headers; --deep decodes everything and compares each committed shard and blob with the
checksum its commit recorded), and that every committed blob exists.
Exit 0 when sound, 1 with a list of problems (key: what is wrong) otherwise.

Example:
  zstream verify /tmp/run.zarr --deep
`,
  plot: `Usage: zstream plot STORE --var V [--record I | --series] [--slice dim=k|dim=a:b ...]
                   [--vmin X] [--vmax Y] [--cmap NAME] [--size W|WxH] [--out file.png|file.svg]

Renders committed data: a heatmap with colour bar for a 2-D slice, a line plot for a 1-D one, or with
--series a time series over every committed record. A streaming variable needs --record (or --series); a
static has none. --slice dim=k fixes a dim at index k, dim=a:b keeps indices a..b-1 (repeatable) until
one or two dims are left. A series is the value at the point the slices fix, or the mean (of finite
values, unweighted) over what they leave: the whole domain when there are none; its time axis is decoded
in the time coordinate's CF calendar. North is up whenever the latitude axis is known (a coordinate with
standard_name latitude, units degrees_north or axis Y, or a dim named lat, latitude or y, taken south to
north without a coordinate). Titles and labels come from the long_name and units attributes. A Zarr v3
store without a manifest is plotted from its arrays: --record then indexes the CF time dim (the dim of a
1-D array with "<unit> since <date>" units) and --series runs along it. Default output:
<var>-<record>.png (or <var>-series.png) in the current directory; its directory must exist.

Options:
  --vmin X, --vmax Y   colour range of a heatmap, value axis of a line (default: the data's);
                       negative values as they are (--vmin -5)
  --cmap NAME          colour map: viridis (default), magma, inferno, plasma, cividis, turbo, RdBu,
                       BrBG, Spectral, Blues, Greys, ... (any d3-scale-chromatic scheme); NAME_r reverses
  --size W|WxH         picture size in pixels (default 900 wide, height from the data's aspect)
  --out FILE           .png, or .svg for the vector picture

Example:
  zstream plot /tmp/run.zarr --var temperature --record 47 --out t47.png
  zstream plot /tmp/run.zarr --var temperature --record 0 --slice lat=90 --out equator.png
  zstream plot /tmp/run.zarr --var temperature --record 47 --cmap RdBu_r --vmin 250 --vmax 310 --size 1200
  zstream plot /tmp/run.zarr --var temperature --series --slice lat=60:120 --slice lon=0:90 --out mean.png
`,
  manifest: `Usage: zstream manifest pages on|off STORE [--json]

Rewrites a v2 store's output_manifest.json in the paged form (on) or in seed 000's form (off), with the
same committed state and commit_seq. Paged, a list longer than 512 entries (indexed records, append time
shards) lives in immutable pages under .zarr-stream/manifest/ and a commit writes a few KB of manifest
at any run length; the manifest is then labelled zarr-stream/output-manifest/v2-paged, which readers
that follow only the seed refuse. Unpaged (the default of a new store), every reader of the seed reads
it, and a commit rewrites the whole list. Writers that resume or join keep the store's form.

The rewrite is a compare-and-swap on the manifest read: if anything wrote the manifest in between (a
commit, another form change) it is refused with ManifestChanged and nothing is written. Run it while no
writer is committing; a live owner whose manifest was rewritten stops at its next commit (CommitError
concurrent-owner) and resumes in the new form. Switching off leaves the old pages in place,
unreferenced, for readers still holding the paged manifest (inspect lists them as uncommitted).

Example:
  zstream manifest pages on /tmp/run.zarr
`,
  dump: `Usage: zstream dump STORE --out dump.json [--case NAME] [--writer NAME]

Writes every committed record, static and blob (read through the read-back API) as
earthsciio/write-v2-dump/v1 JSON, the format the conformance crosscheck compares.

Example:
  zstream dump /tmp/run.zarr --out run.dump.json
`,
};
