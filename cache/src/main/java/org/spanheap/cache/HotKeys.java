package org.spanheap.cache;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The {@code limit} keys with the highest frequency estimates among those
 * offered: a min-heap on the estimate, so that a key only enters when it beats
 * the coldest one kept. Among equal estimates the key offered first stays.
 * Not thread-safe: the index fills it segment by segment under each lock.
 */
final class HotKeys {

    private final int limit;
    private int[] frequencies;
    private Object[] keys;
    private int size;

    HotKeys(int limit) {
        this.limit = limit;
        int capacity = Math.min(limit, 1 << 16); // grows beyond that only if that many keys come
        this.frequencies = new int[capacity];
        this.keys = new Object[capacity];
    }

    /** {@return whether a key of this estimate would be kept} Lets a caller skip making the key object. */
    boolean wants(int frequency) {
        return size < limit || (limit > 0 && frequency > frequencies[0]);
    }

    /** Offers a key with its estimate; callers ask {@link #wants} first. */
    void offer(int frequency, Object key) {
        if (size < limit) {
            if (size == frequencies.length) {
                int capacity = (int) Math.min(limit, 2L * frequencies.length);
                frequencies = Arrays.copyOf(frequencies, capacity);
                keys = Arrays.copyOf(keys, capacity);
            }
            keys[size] = key;
            frequencies[size] = frequency;
            siftUp(size++);
        } else if (frequency > frequencies[0]) {
            keys[0] = key;
            frequencies[0] = frequency;
            siftDown(0);
        }
    }

    /** {@return the kept keys, the highest estimate first} Empties this selection. */
    List<Object> hottestFirst() {
        Object[] out = new Object[size];
        for (int i = size - 1; i >= 0; i--) { // the root is the coldest: take it, last place first
            out[i] = keys[0];
            size--;
            keys[0] = keys[size];
            frequencies[0] = frequencies[size];
            keys[size] = null;
            siftDown(0);
        }
        return new ArrayList<>(Arrays.asList(out));
    }

    private void siftUp(int i) {
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (frequencies[parent] <= frequencies[i]) {
                return;
            }
            swap(i, parent);
            i = parent;
        }
    }

    private void siftDown(int i) {
        for (;;) {
            int child = 2 * i + 1;
            if (child >= size) {
                return;
            }
            if (child + 1 < size && frequencies[child + 1] < frequencies[child]) {
                child++;
            }
            if (frequencies[i] <= frequencies[child]) {
                return;
            }
            swap(i, child);
            i = child;
        }
    }

    private void swap(int a, int b) {
        int f = frequencies[a];
        frequencies[a] = frequencies[b];
        frequencies[b] = f;
        Object k = keys[a];
        keys[a] = keys[b];
        keys[b] = k;
    }
}
