/** One thing `zstream verify` found wrong: the store key it is about, and what is wrong with it. */
export interface Problem {
  key: string;
  problem: string;
}
