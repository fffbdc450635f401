-- A shopper's search, faster at a shop's scale (docs/performance.md#a-shops-storefront).
--
-- bike_search_queries as the migration storefront_search made it, but for its eighth query (the
-- bikes to find, every word anywhere, with typos): null too when no bike can match it, when one
-- of the words, its prefixes or typos, is no bike's word at all. It was kept whatever the words,
-- and the words' index then built the bitmap of the other words' bikes to find none: a word every
-- bike has beside one no bike has took 20 ms at 100,000 bikes. A null query matches no bike, and
-- an index scan for it reads nothing.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

CREATE OR REPLACE FUNCTION "bike_search_queries"(q TEXT) RETURNS tsquery[] LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT SET pg_trgm.similarity_threshold = 0.2 AS $$
DECLARE
  weights CONSTANT TEXT[] := ARRAY['A', 'AB', 'ABC', ''];
  fields CONSTANT TEXT[] := ARRAY['A', 'AB', 'ABC', 'ABCD'];
  exact TEXT[] := ARRAY['', '', '', ''];
  fuzzy TEXT[] := ARRAY['', '', '', ''];
  can_exact BOOLEAN[] := ARRAY[true, true, true, true];
  can_fuzzy BOOLEAN[] := ARRAY[true, true, true, true];
  words TEXT[];
  typos TEXT[];
  this TEXT;
  term TEXT;
  allowed INTEGER;
  joiner TEXT;
  last BOOLEAN;
  upper_code INTEGER;
  found_in TEXT;
  typos_in TEXT;
BEGIN
  SELECT array_agg(lexeme ORDER BY (SELECT min(p) FROM unnest(positions) AS p)) INTO words
  FROM unnest(bike_search_words(q));
  IF words IS NULL THEN
    RETURN NULL;
  END IF;
  FOR i IN 1 .. cardinality(words) LOOP
    this := words[i];
    last := i = cardinality(words);
    allowed := CASE WHEN length(this) >= 9 THEN 2 WHEN length(this) >= 5 THEN 1 ELSE 0 END;
    typos := '{}';
    typos_in := '';
    IF allowed > 0 THEN
      SELECT coalesce(array_agg(DISTINCT known."word" ORDER BY known."word"), '{}'),
        coalesce(string_agg(DISTINCT known."weight", ''), '') INTO typos, typos_in
      FROM "bike_words" known
      WHERE known."word" % this AND known."word" <> this
        AND CASE WHEN abs(length(known."word") - length(this)) <= allowed AND length(known."word") <= 255
          THEN levenshtein_less_equal(known."word", this, allowed) <= allowed ELSE false END;
    END IF;
    -- The fields the word is in (the last: any word it begins).
    upper_code := ascii(right(this, 1)) + 1;
    IF NOT last THEN
      SELECT coalesce(string_agg(DISTINCT known."weight", ''), '') INTO found_in
      FROM "bike_words" known WHERE known."word" = this;
    ELSIF upper_code <= 1114111 AND upper_code NOT BETWEEN 55296 AND 57343 THEN
      SELECT coalesce(string_agg(DISTINCT known."weight", ''), '') INTO found_in
      FROM "bike_words" known
      WHERE known."word" >= this AND known."word" < left(this, -1) || chr(upper_code);
    ELSE
      found_in := 'ABCD';
    END IF;
    joiner := CASE WHEN i > 1 THEN ' & ' ELSE '' END;
    FOR w IN 1 .. 4 LOOP
      can_exact[w] := can_exact[w] AND found_in ~ ('[' || fields[w] || ']');
      can_fuzzy[w] := can_fuzzy[w] AND (found_in || typos_in) ~ ('[' || fields[w] || ']');
      term := bike_search_term(this) || CASE WHEN last OR weights[w] <> '' THEN ':' ELSE '' END
        || CASE WHEN last THEN '*' ELSE '' END || weights[w];
      exact[w] := exact[w] || joiner || '(' || term || ')';
      fuzzy[w] := fuzzy[w] || joiner || '(' || term || (
        SELECT coalesce(string_agg(' | ' || bike_search_term(typo) || CASE WHEN weights[w] <> '' THEN ':' ELSE '' END
          || weights[w], ''), '') FROM unnest(typos) AS typo) || ')';
    END LOOP;
  END LOOP;
  RETURN ARRAY[
    CASE WHEN can_exact[1] THEN exact[1]::tsquery END, CASE WHEN can_exact[2] THEN exact[2]::tsquery END,
    CASE WHEN can_exact[3] THEN exact[3]::tsquery END, CASE WHEN can_exact[4] THEN exact[4]::tsquery END,
    CASE WHEN can_fuzzy[1] THEN fuzzy[1]::tsquery END, CASE WHEN can_fuzzy[2] THEN fuzzy[2]::tsquery END,
    CASE WHEN can_fuzzy[3] THEN fuzzy[3]::tsquery END, CASE WHEN can_fuzzy[4] THEN fuzzy[4]::tsquery END];
END
$$;
