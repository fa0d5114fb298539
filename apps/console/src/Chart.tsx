/**
 * Validations over time as a line chart (uPlot: canvas, small, fast with thousands of points). Times are shown in
 * the browser's time zone. The container tells tests what it drew: `data-points` (buckets) and `data-total`.
 */
import { useEffect, useRef } from "preact/hooks"
import uPlot from "uplot"
import "uplot/dist/uPlot.min.css"
import type { Series } from "./api.js"
import { formatNumber } from "./format.js"

/** Steps of the count axis: whole numbers only (1, 2, 5, 10, 20, 50, ...). */
const wholeSteps = Array.from({ length: 30 }, (_, i) => [1, 2, 5][i % 3]! * 10 ** Math.floor(i / 3))

const colour = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback

export const ValidationsChart = ({ series, label }: { readonly series: Series; readonly label: string }) => {
  const box = useRef<HTMLDivElement>(null)
  const total = series.series.reduce((sum, point) => sum + point.total, 0)
  useEffect(() => {
    const element = box.current
    if (element === null) return
    const data: uPlot.AlignedData = [
      series.series.map((p) => Date.parse(p.t) / 1000),
      series.series.map((p) => p.valid),
      series.series.map((p) => p.invalid)
    ]
    const width = () => Math.max(280, element.clientWidth)
    const chart = new uPlot({
      width: width(),
      height: 240,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { incrs: wholeSteps, values: (_u, ticks) => ticks.map((t) => formatNumber(t)) }],
      series: [
        {},
        { label: "Valid", stroke: colour("--ok", "#237a47"), width: 2, fill: colour("--ok-fill", "rgba(35,122,71,0.12)") },
        { label: "Refused", stroke: colour("--bad", "#b42318"), width: 2 }
      ]
    }, data, element)
    const resize = new ResizeObserver(() => chart.setSize({ width: width(), height: 240 }))
    resize.observe(element)
    return () => {
      resize.disconnect()
      chart.destroy()
    }
  }, [series])
  return (
    <figure class="chart">
      <div ref={box} class="chart-canvas" role="img" aria-label={`${label}: ${formatNumber(total)} validations`} data-points={series.series.length} data-total={total} />
      <figcaption class="visually-hidden">{label}</figcaption>
    </figure>
  )
}
