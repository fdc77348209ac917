package dev.stitch.bench.report;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;

/** Builds the report's charts with XChart and writes them as PNG files. */
final class ChartSet {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 520;

    static {
        // Rendering must never need a display: the report runs in CI and over SSH.
        System.setProperty("java.awt.headless", "true");
    }

    private ChartSet() {
    }

    /** Points of named series for an XY chart; series keep insertion order, points are sorted by x. */
    static final class XySeriesData {
        private final Map<String, TreeMap<Double, Double>> series = new LinkedHashMap<>();

        void add(String series, double x, double y) {
            if (Double.isFinite(x) && Double.isFinite(y)) {
                this.series.computeIfAbsent(series, k -> new TreeMap<>()).put(x, y);
            }
        }

        boolean isEmpty() {
            return series.isEmpty();
        }

        boolean allPositive() {
            for (TreeMap<Double, Double> points : series.values()) {
                for (Map.Entry<Double, Double> p : points.entrySet()) {
                    if (p.getKey() <= 0 || p.getValue() <= 0) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

    /** Values of named series over shared categories; a series without a value for a category leaves a gap. */
    static final class CategoryData {
        private final List<String> categories = new ArrayList<>();
        private final Map<String, Map<String, Double>> series = new LinkedHashMap<>();

        void add(String series, String category, double y) {
            if (!Double.isFinite(y)) {
                return;
            }
            if (!categories.contains(category)) {
                categories.add(category);
            }
            this.series.computeIfAbsent(series, k -> new LinkedHashMap<>()).put(category, y);
        }

        boolean isEmpty() {
            return series.isEmpty();
        }
    }

    static void xy(Path file, String title, String xTitle, String yTitle, XySeriesData data, boolean logX, boolean logY)
            throws IOException {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setMarkerSize(7);
        boolean positive = data.allPositive();
        chart.getStyler().setXAxisLogarithmic(logX && positive);
        chart.getStyler().setYAxisLogarithmic(logY && positive);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        for (Map.Entry<String, TreeMap<Double, Double>> s : data.series.entrySet()) {
            double[] x = new double[s.getValue().size()];
            double[] y = new double[x.length];
            int i = 0;
            for (Map.Entry<Double, Double> p : s.getValue().entrySet()) {
                x[i] = p.getKey();
                y[i++] = p.getValue();
            }
            chart.addSeries(s.getKey(), x, y);
        }
        save(chart, file);
    }

    static void bars(Path file, String title, String xTitle, String yTitle, CategoryData data) throws IOException {
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setXAxisLabelRotation(30);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        for (Map.Entry<String, Map<String, Double>> s : data.series.entrySet()) {
            List<Double> y = new ArrayList<>(data.categories.size());
            for (String c : data.categories) {
                y.add(s.getValue().get(c));
            }
            chart.addSeries(s.getKey(), data.categories, y);
        }
        save(chart, file);
    }

    private static void save(Chart<?, ?> chart, Path file) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (OutputStream out = Files.newOutputStream(tmp)) {
            BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG);
        }
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
