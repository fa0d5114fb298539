/** What the generators feature needs from a store: the generators themselves (their pools are licenses). */
import { Context } from "effect"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { Generator, GeneratorDraft } from "./model.js"

export class GeneratorRepository extends Context.Service<GeneratorRepository, {
  readonly insert: (draft: GeneratorDraft) => Op<Generator>
  readonly findById: (id: number) => Op<Generator | undefined>
  readonly list: (page: PageRequest) => Op<Page<Generator>>
  readonly update: (generator: Generator) => Op<Generator>
  readonly delete: (id: number) => Op<void>
}>()("@lm/domain/GeneratorRepository") {}
