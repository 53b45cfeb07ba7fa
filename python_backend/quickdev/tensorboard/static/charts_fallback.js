/*
 * A small stand-in for the parts of Google Charts that the PyTorch Profiler plugin
 * uses, loaded only when https://www.gstatic.com/charts/loader.js cannot be (no
 * internet, as on many training machines). Without it the plugin's pages wait for
 * Google Charts forever and show a spinner. Plain SVG and HTML; no dependencies.
 */
(function () {
  "use strict";
  if (window.google && window.google.charts) return;

  var SVG = "http://www.w3.org/2000/svg";
  var PALETTE = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6",
    "#dd4477", "#66aa00", "#b82e2e", "#316395", "#994499", "#22aa99"];
  var FONT = "12px Roboto, Arial, sans-serif";

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }
  function text(parent, x, y, value, attrs) {
    var node = el("text", Object.assign({ x: x, y: y, "font-size": 12, fill: "#444" }, attrs || {}), parent);
    node.textContent = value;
    return node;
  }
  function tip(node, value) {
    var t = el("title", {}, node);
    t.textContent = String(value).replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  }
  function cellValue(v) { return v !== null && typeof v === "object" && "v" in v ? v.v : v; }
  function fmt(v) {
    if (typeof v !== "number") return v === null || v === undefined ? "" : String(v);
    return Math.abs(v) >= 1000 || Number.isInteger(v) ? v.toLocaleString() : String(+v.toFixed(3));
  }

  function DataTable() { this.cols = []; this.rows = []; this.props = {}; }
  DataTable.prototype.addColumn = function (spec, label) {
    if (typeof spec === "string") spec = { type: spec, label: label };
    this.cols.push(spec || {});
    return this.cols.length - 1;
  };
  DataTable.prototype.addRow = function (row) { this.rows.push((row || []).slice()); return this.rows.length - 1; };
  DataTable.prototype.addRows = function (rows) {
    var self = this;
    if (typeof rows === "number") { for (var i = 0; i < rows; i++) self.addRow([]); }
    else (rows || []).forEach(function (r) { self.addRow(r); });
  };
  DataTable.prototype.getNumberOfRows = function () { return this.rows.length; };
  DataTable.prototype.getNumberOfColumns = function () { return this.cols.length; };
  DataTable.prototype.getValue = function (r, c) { return cellValue(this.rows[r][c]); };
  DataTable.prototype.getFormattedValue = function (r, c) {
    var v = this.rows[r][c];
    return v !== null && typeof v === "object" && "f" in v ? v.f : fmt(cellValue(v));
  };
  DataTable.prototype.getColumnLabel = function (c) { return this.cols[c].label || this.cols[c].id || ""; };
  DataTable.prototype.getColumnType = function (c) { return this.cols[c].type; };
  DataTable.prototype.getColumnRole = function (c) { return this.cols[c].role || ""; };
  DataTable.prototype.setProperty = function (r, c, name, value) {
    var key = r + "," + c;
    (this.props[key] = this.props[key] || {})[name] = value;
  };
  DataTable.prototype.getProperty = function (r, c, name) { return (this.props[r + "," + c] || {})[name]; };

  function arrayToDataTable(rows, firstRowIsData) {
    var table = new DataTable();
    var header = firstRowIsData ? rows[0].map(function (_, i) { return "Column " + i; }) : rows[0];
    var body = firstRowIsData ? rows : rows.slice(1);
    header.forEach(function (h, i) {
      var spec = typeof h === "object" && h !== null ? h : { label: String(h) };
      if (!spec.type) spec.type = body.length && typeof cellValue(body[0][i]) === "number" ? "number" : "string";
      table.addColumn(spec);
    });
    table.addRows(body);
    return table;
  }

  var events = {
    addListener: function (target, name, fn) {
      var list = (target.__listeners = target.__listeners || []);
      var handle = { target: target, name: name, fn: fn };
      list.push(handle);
      return handle;
    },
    addOneTimeListener: function (target, name, fn) {
      var handle = events.addListener(target, name, function (e) { events.removeListener(handle); fn(e); });
      return handle;
    },
    removeListener: function (handle) {
      var list = (handle && handle.target.__listeners) || [];
      var i = list.indexOf(handle);
      if (i >= 0) list.splice(i, 1);
    },
    removeAllListeners: function (target) { target.__listeners = []; },
    trigger: function (target, name, arg) {
      (target.__listeners || []).slice().forEach(function (h) { if (h.name === name) h.fn(arg); });
    }
  };

  /* Series: the domain column, then number columns; role columns (tooltips) attach to the series before them. */
  function seriesOf(data) {
    var series = [];
    for (var c = 1; c < data.getNumberOfColumns(); c++) {
      var role = data.getColumnRole(c);
      if (role === "tooltip" && series.length) series[series.length - 1].tooltip = c;
      else if (!role && data.getColumnType(c) === "number") series.push({ col: c, label: data.getColumnLabel(c) });
    }
    return series;
  }

  function Chart(container) { this.container = container; this.selection = []; }
  Chart.prototype.clearChart = function () { this.container.innerHTML = ""; };
  Chart.prototype.getSelection = function () { return this.selection; };
  Chart.prototype.setSelection = function (s) { this.selection = s || []; };
  Chart.prototype.draw = function (data, options) {
    this.options = options || {};
    this.clearChart();
    var width = this.container.clientWidth || 600;
    var height = parseInt(this.options.height, 10) || this.container.clientHeight || 300;
    var svg = el("svg", { width: "100%", height: height, viewBox: "0 0 " + width + " " + height,
      style: "font:" + FONT + ";background:#fff" }, null);
    this.container.appendChild(svg);
    var top = 10;
    if (this.options.title) { text(svg, width / 2, 18, this.options.title, { "text-anchor": "middle", "font-weight": "bold" }); top = 30; }
    this.render(svg, data, width, height, top);
    var self = this;
    setTimeout(function () { events.trigger(self, "ready"); }, 0);
  };
  function colours(options) { return (options.colors && options.colors.length ? options.colors : PALETTE); }

  function legend(svg, labels, cols, x, y, width) {
    var cx = x;
    labels.forEach(function (label, i) {
      var w = 24 + label.length * 7;
      if (cx + w > x + width) { cx = x; y += 16; }
      el("rect", { x: cx, y: y - 9, width: 10, height: 10, fill: cols[i % cols.length] }, svg);
      text(svg, cx + 14, y, label);
      cx += w;
    });
  }

  /* Bars (stacked or side by side), stepped areas and lines over a category or number axis. */
  function XYChart(container, kind) { Chart.call(this, container); this.kind = kind; }
  XYChart.prototype = Object.create(Chart.prototype);
  XYChart.prototype.render = function (svg, data, width, height, top) {
    var o = this.options, series = seriesOf(data), n = data.getNumberOfRows(), cols = colours(o);
    var left = 80, right = 20, bottom = 60;
    var plotW = Math.max(10, width - left - right), plotH = Math.max(10, height - top - bottom);
    this.area = { left: left, top: top, width: plotW, height: plotH };
    var stacked = !!o.isStacked && this.kind !== "line";
    var numericX = data.getColumnType(0) === "number" && this.kind === "line";
    var max = 0, minX = Infinity, maxX = -Infinity;
    for (var r = 0; r < n; r++) {
      var sum = 0;
      series.forEach(function (s) {
        var v = +data.getValue(r, s.col) || 0;
        sum = stacked ? sum + v : Math.max(sum, v);
      });
      max = Math.max(max, sum);
      if (numericX) { var xv = +data.getValue(r, 0); minX = Math.min(minX, xv); maxX = Math.max(maxX, xv); }
    }
    if (max <= 0) max = 1;
    if (!(maxX > minX)) { minX = 0; maxX = Math.max(1, n - 1); }
    this.xRange = numericX ? [minX, maxX] : [0, n];
    var y = function (v) { return top + plotH - (v / max) * plotH; };
    for (var t = 0; t <= 4; t++) {
      var tv = (max * t) / 4, ty = y(tv);
      el("line", { x1: left, x2: left + plotW, y1: ty, y2: ty, stroke: "#e0e0e0" }, svg);
      text(svg, left - 6, ty + 4, fmt(+tv.toPrecision(3)), { "text-anchor": "end" });
    }
    if (o.vAxis && o.vAxis.title) text(svg, 14, top + plotH / 2, o.vAxis.title, { transform: "rotate(-90 14 " + (top + plotH / 2) + ")", "text-anchor": "middle" });
    if (o.hAxis && o.hAxis.title) text(svg, left + plotW / 2, top + plotH + 34, o.hAxis.title, { "text-anchor": "middle" });
    var band = plotW / Math.max(n, 1);
    if (this.kind === "line") {
      series.forEach(function (s, i) {
        var pts = [];
        for (var r = 0; r < n; r++) {
          var xv = numericX ? left + ((+data.getValue(r, 0) - minX) / (maxX - minX)) * plotW : left + band * (r + 0.5);
          pts.push(xv.toFixed(1) + "," + y(+data.getValue(r, s.col) || 0).toFixed(1));
        }
        el("polyline", { points: pts.join(" "), fill: "none", stroke: cols[i % cols.length], "stroke-width": 2 }, svg);
      });
    } else {
      var gap = this.kind === "stepped" ? 0 : band * 0.2;
      for (var row = 0; row < n; row++) {
        var base = 0, x0 = left + band * row + gap / 2, bw = band - gap;
        series.forEach(function (s, i) {
          var v = +data.getValue(row, s.col) || 0;
          var x = stacked ? x0 : x0 + (bw / series.length) * i, w = stacked ? bw : bw / series.length;
          var y0 = y(base + v), h = y(base) - y0;
          var bar = el("rect", { x: x, y: y0, width: Math.max(w, 0.5), height: Math.max(h, 0), fill: cols[i % cols.length],
            "fill-opacity": this.kind === "stepped" ? (o.areaOpacity || 0.9) : 1 }, svg);
          tip(bar, s.tooltip !== undefined ? data.getValue(row, s.tooltip) : s.label + ": " + fmt(v));
          if (stacked) base += v;
        }, this);
        if (n <= 40) text(svg, x0 + bw / 2, top + plotH + 16, data.getFormattedValue(row, 0), { "text-anchor": "middle" });
      }
    }
    el("line", { x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH, stroke: "#888" }, svg);
    legend(svg, series.map(function (s) { return s.label; }), cols, left, height - 8, plotW);
  };
  XYChart.prototype.getChartLayoutInterface = function () {
    var area = this.area || { left: 0, top: 0, width: 1, height: 1 }, range = this.xRange || [0, 1];
    return {
      getChartAreaBoundingBox: function () { return area; },
      getHAxisValue: function (x) { return range[0] + ((x - area.left) / area.width) * (range[1] - range[0]); }
    };
  };

  function PieChart(container) { Chart.call(this, container); }
  PieChart.prototype = Object.create(Chart.prototype);
  PieChart.prototype.render = function (svg, data, width, height, top) {
    var o = this.options, cols = colours(o), n = data.getNumberOfRows(), total = 0;
    for (var r = 0; r < n; r++) total += Math.max(0, +data.getValue(r, 1) || 0);
    var showLegend = o.legend !== "none";
    var radius = Math.max(10, Math.min((showLegend ? width * 0.5 : width) / 2, height - top - 10) / 2 - 4);
    var cx = showLegend ? radius + 20 : width / 2, cy = top + (height - top) / 2, hole = radius * (o.pieHole || 0);
    var angle = -Math.PI / 2, tooltipCol = data.getNumberOfColumns() > 2 && data.getColumnRole(2) === "tooltip" ? 2 : -1;
    for (var i = 0; i < n; i++) {
      var v = Math.max(0, +data.getValue(i, 1) || 0), share = total ? v / total : 0, end = angle + share * 2 * Math.PI;
      var large = end - angle > Math.PI ? 1 : 0, colour = cols[i % cols.length];
      var p = function (a, rad) { return (cx + rad * Math.cos(a)).toFixed(2) + " " + (cy + rad * Math.sin(a)).toFixed(2); };
      var d = share >= 0.9999
        ? "M " + p(0, radius) + " A " + radius + " " + radius + " 0 1 1 " + p(Math.PI, radius) + " A " + radius + " " + radius + " 0 1 1 " + p(0, radius) + " Z"
        : "M " + p(angle, radius) + " A " + radius + " " + radius + " 0 " + large + " 1 " + p(end, radius) + " L " + p(end, hole) +
          (hole ? " A " + hole + " " + hole + " 0 " + large + " 0 " + p(angle, hole) : "") + " Z";
      var slice = el("path", { d: d, fill: colour, stroke: "#fff", "stroke-width": 1 }, svg);
      tip(slice, tooltipCol >= 0 ? data.getValue(i, tooltipCol) : data.getFormattedValue(i, 0) + ": " + fmt(v) + " (" + (share * 100).toFixed(1) + "%)");
      if (showLegend && i < 12) {
        var ly = top + 14 + i * 18;
        el("rect", { x: cx + radius + 24, y: ly - 10, width: 10, height: 10, fill: colour }, svg);
        text(svg, cx + radius + 40, ly, data.getFormattedValue(i, 0) + " (" + (share * 100).toFixed(1) + "%)");
      }
      angle = end;
    }
    if (hole) el("circle", { cx: cx, cy: cy, r: hole, fill: "#fff" }, svg);
  };

  function Table(container) { Chart.call(this, container); }
  Table.prototype = Object.create(Chart.prototype);
  Table.prototype.draw = function (data, options) {
    this.options = options || {};
    this.data = data;
    var order = [];
    for (var r = 0; r < data.getNumberOfRows(); r++) order.push(r);
    var sc = this.options.sortColumn, asc = this.options.sortAscending !== false;
    if (typeof sc === "number" && sc >= 0) {
      order.sort(function (a, b) {
        var x = data.getValue(a, sc), y = data.getValue(b, sc);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
    }
    this.order = order;
    this.page = 0;
    this.renderPage();
    var self = this;
    setTimeout(function () { events.trigger(self, "ready"); }, 0);
  };
  Table.prototype.renderPage = function () {
    var data = this.data, o = this.options, self = this;
    var size = o.page === "enable" ? o.pageSize || 10 : this.order.length;
    var pages = Math.max(1, Math.ceil(this.order.length / size));
    this.container.innerHTML = "";
    var table = document.createElement("table");
    table.style.cssText = "border-collapse:collapse;width:100%;font:" + FONT;
    var head = table.insertRow();
    var visible = [];
    for (var c = 0; c < data.getNumberOfColumns(); c++) {
      if (data.getColumnRole(c)) continue;
      visible.push(c);
      var th = document.createElement("th");
      th.textContent = data.getColumnLabel(c);
      th.style.cssText = "text-align:left;padding:4px 8px;border-bottom:2px solid #ccc;background:#f5f5f5";
      head.appendChild(th);
    }
    this.order.slice(this.page * size, (this.page + 1) * size).forEach(function (r, i) {
      var tr = table.insertRow();
      if (i % 2) tr.style.background = "#fafafa";
      visible.forEach(function (c) {
        var td = tr.insertCell();
        td.style.cssText = "padding:3px 8px;border-bottom:1px solid #eee;" + (data.getColumnType(c) === "number" ? "text-align:right" : "");
        var style = data.getProperty(r, c, "style");
        if (style) td.style.cssText += ";" + style;
        var value = data.getFormattedValue(r, c);
        if (o.allowHtml) td.innerHTML = value; else td.textContent = value;
      });
    });
    this.container.appendChild(table);
    if (pages > 1) {
      var nav = document.createElement("div");
      nav.style.cssText = "padding:6px;font:" + FONT;
      [["‹", -1], ["›", 1]].forEach(function (b) {
        var button = document.createElement("button");
        button.textContent = b[0];
        button.onclick = function () { self.page = Math.min(pages - 1, Math.max(0, self.page + b[1])); self.renderPage(); };
        nav.appendChild(button);
      });
      nav.appendChild(document.createTextNode(" page " + (this.page + 1) + " of " + pages));
      this.container.appendChild(nav);
    }
  };

  /* Rows of labelled bars over time: [row label, bar label, (tooltip,) start, end]. */
  function Timeline(container) { Chart.call(this, container); }
  Timeline.prototype = Object.create(Chart.prototype);
  Timeline.prototype.render = function (svg, data, width, height, top) {
    var n = data.getNumberOfRows(), cols = data.getNumberOfColumns();
    var rows = [], min = Infinity, max = -Infinity;
    for (var r = 0; r < n; r++) {
      var s = +data.getValue(r, cols - 2), e = +data.getValue(r, cols - 1), label = String(data.getValue(r, 0));
      if (rows.indexOf(label) < 0) rows.push(label);
      min = Math.min(min, s); max = Math.max(max, e);
    }
    var rowH = Math.max(8, (height - top - 10) / Math.max(rows.length, 1));
    var scale = function (v) { return 10 + ((v - min) / Math.max(max - min, 1e-9)) * (width - 20); };
    for (var i = 0; i < n; i++) {
      var x0 = scale(+data.getValue(i, cols - 2)), x1 = scale(+data.getValue(i, cols - 1));
      var y = top + rows.indexOf(String(data.getValue(i, 0))) * rowH;
      var bar = el("rect", { x: x0, y: y + 2, width: Math.max(1, x1 - x0), height: rowH - 4, fill: PALETTE[i % PALETTE.length] }, svg);
      tip(bar, cols > 4 ? data.getValue(i, 2) : data.getValue(i, 1));
      if (x1 - x0 > 40) text(svg, x0 + 3, y + rowH / 2 + 4, String(data.getValue(i, 1)).slice(0, Math.floor((x1 - x0) / 7)), { fill: "#fff" });
    }
  };

  function chartOf(kind) { return function (container) { XYChart.call(this, container, kind); }; }
  var ColumnChart = chartOf("bars"), ComboChart = chartOf("bars"), SteppedAreaChart = chartOf("stepped"), LineChart = chartOf("line");
  [ColumnChart, ComboChart, SteppedAreaChart, LineChart].forEach(function (C) { C.prototype = XYChart.prototype; });

  window.google = window.google || {};
  window.google.visualization = {
    DataTable: DataTable, arrayToDataTable: arrayToDataTable, events: events,
    ColumnChart: ColumnChart, ComboChart: ComboChart, SteppedAreaChart: SteppedAreaChart, LineChart: LineChart,
    PieChart: PieChart, Table: Table, Timeline: Timeline
  };
  window.google.charts = {
    load: function () { return Promise.resolve(); },
    setOnLoadCallback: function (fn) { Promise.resolve().then(fn); }
  };
})();
