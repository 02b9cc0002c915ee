//! A chart on a page: the SVG the server drew (see `runboard::charts`) and,
//! beside it, the same figures as a table.

use leptos::prelude::*;
use runboard::charts::Chart;

/// Shows a chart with its table (folded away under the picture); `empty`
/// says what is missing when there is nothing to draw.
#[component]
pub fn ChartFigure(chart: Chart, #[prop(into)] empty: String, #[prop(optional, into)] class: String) -> impl IntoView {
    if chart.table.rows.is_empty() {
        // Nothing to draw: say what is missing, or nothing when the page
        // says it elsewhere.
        return (!empty.is_empty()).then(|| view! { <p class="empty">{empty}</p> }).into_any();
    }
    let Chart { title, svg, table } = chart;
    let rows = table.rows.len();
    view! {
        <figure class=format!("chart {class}") aria-label=title.clone()>
            <div class="chart-svg" role="img" aria-label=title.clone() inner_html=svg></div>
            <details class="chart-table">
                <summary>{format!("{title}: the numbers ({rows} rows)")}</summary>
                <table>
                    <thead><tr>{table.columns.into_iter().map(|c| view! { <th>{c}</th> }).collect_view()}</tr></thead>
                    <tbody>
                        {table.rows.into_iter().map(|r| view! {
                            <tr>{r.into_iter().map(|v| view! { <td>{v}</td> }).collect_view()}</tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </details>
        </figure>
    }
    .into_any()
}
