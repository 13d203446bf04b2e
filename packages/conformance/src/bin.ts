#!/usr/bin/env node
import { processIO, runConformanceCli } from "./cli.js";

process.exitCode = await runConformanceCli(process.argv.slice(2), processIO);
