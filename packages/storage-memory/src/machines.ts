/**
 * The domain's `MachineRepository` in memory. A batch of seat changes writes its machines and appends its events
 * to the outbox in the caller's transaction.
 */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tx } from "./Database.js"
import { byId, frozen, notInTransaction, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables, eventOutbox: Ports.EventOutbox["Service"]): Ports.MachineRepository["Service"] => {
  const { db, insertRows, licenses, lockName, machines, read, replace } = t
  let componentSeq = 0

  const withComponentIds = (components: ReadonlyArray<Model.ComponentDraft>) =>
    components.map((component) => ({ id: ++componentSeq, kind: component.kind, fingerprint: component.fingerprint, name: component.name }))

  const machinesOf = (tx: Tx | undefined, licenseId: number) => machines.inGroup(db.overlayOf(tx, machines), "license", licenseId)

  const insertMachines = (drafts: ReadonlyArray<Model.MachineDraft>) =>
    db.inTransaction((tx) =>
      Effect.suspend(() => {
        const orphan = drafts.find((draft) => licenses.get(db.overlayOf(tx, licenses), draft.licenseId) === undefined)
        if (orphan !== undefined) return Effect.die(new Error(`no license with id ${orphan.licenseId} for the machine`))
        const rows = drafts.map((draft) => frozen<Model.Machine>({ ...draft, id: machines.nextId(), components: withComponentIds(draft.components) }))
        return insertRows(tx, machines, rows)
      })
    )

  const updateMachines = (list: ReadonlyArray<Model.Machine>) =>
    list.length === 0 ? Effect.void : db.inTransaction((tx) =>
      Effect.forEach(list, (machine) => replace(tx, machines, machine, (current) => ({ ...machine, components: current.components })), {
        discard: true
      })
    )

  return Ports.MachineRepository.of({
    insert: (draft: Model.MachineDraft) => Effect.map(insertMachines([draft]), (rows) => rows[0]!),
    writeSeatChanges: ({ events, inserts, updates }) =>
      db.inTransaction(() =>
        Effect.gen(function*() {
          const inserted = inserts.length === 0 ? [] : yield* insertMachines(inserts)
          yield* updateMachines(updates)
          yield* eventOutbox.append(
            events.map(({ event, insertIndex }) => (insertIndex === undefined ? event : { ...event, machineId: inserted[insertIndex]!.id }))
          )
          return inserted
        })
      ),
    listForSeatChanges: (named) =>
      read((tx) => {
        const out = new Map<number, Model.Machine>()
        for (const licenseId of new Set(named.map((n) => n.licenseId))) {
          for (const machine of machinesOf(tx, licenseId)) if (machine.status === "active") out.set(machine.id, machine)
        }
        for (const { licenseId, fingerprint } of named) {
          const record = machines.findUnique(db.overlayOf(tx, machines), "fingerprint", `${licenseId}\u0000${fingerprint}`)
          if (record !== undefined) out.set(record.id, record)
        }
        return [...out.values()].sort(byId)
      }),
    update: (machine, components) =>
      db.inTransaction((tx) =>
        replace(tx, machines, machine, (current) => ({
          ...machine,
          components: components === undefined ? current.components : withComponentIds(components)
        }))
      ),
    findById: (id) => read((tx) => machines.get(db.overlayOf(tx, machines), id)),
    findByFingerprint: (licenseId, fingerprint) =>
      read((tx) => machines.findUnique(db.overlayOf(tx, machines), "fingerprint", `${licenseId}\u0000${fingerprint}`)),
    listActive: (licenseId) => read((tx) => [...machinesOf(tx, licenseId)].filter((m) => m.status === "active")),
    listOf: (licenseIds) => read((tx) => licenseIds.flatMap((id) => [...machinesOf(tx, id)]).sort(byId)),
    listActiveOf: (licenseIds) =>
      read((tx) => licenseIds.flatMap((id) => [...machinesOf(tx, id)].filter((m) => m.status === "active")).sort(byId)),
    listForValidation: (licenseId, fingerprint) =>
      read((tx) => [...machinesOf(tx, licenseId)].filter((m) => m.status === "active" || m.fingerprint === fingerprint)),
    list: (licenseId, query: Ports.MachineQuery) =>
      read((tx) => pageOf([...machinesOf(tx, licenseId)].filter((m) => query.status === undefined || m.status === query.status), query)),
    claimExpired: (now, limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimExpired")
        const due = [...machines.inGroup(db.overlayOf(tx, machines), "due", 0)]
          .filter((m) => m.seatDeadline !== null && m.seatDeadline <= now && !db.lockedByOther(tx, lockName(machines, m.id)))
          .sort((a, b) => a.seatDeadline! - b.seatDeadline! || a.id - b.id)
          .slice(0, Math.max(0, limit))
        for (const machine of due) db.tryLock(tx, lockName(machines, machine.id))
        return Effect.succeed(due)
      }),
    listRevoked: read((tx) => [...machines.inGroup(db.overlayOf(tx, machines), "revoked", 0)].map((m) => ({ id: m.id, fingerprint: m.fingerprint })))
  })
}
