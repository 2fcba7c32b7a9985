/* patterndb.c - the database itself: made, freed, looked up. Loading is rules.c's, compiling
 * compile.c's (both above this file: they fill what it defines). */
#include "db/patterndb.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/embedded.h"

pdb *pdb_new(void)
{
    pdb *db = calloc(1, sizeof(pdb));
    if (db && pthread_mutex_init(&db->jit_mu, NULL) != 0) {
        free(db);
        return NULL;
    }
    for (size_t c = 0; db && c < sizeof db->class_phase / sizeof db->class_phase[0]; c++)
        db->class_phase[c] = -1;
    return db;
}

void pdb_free_pattern(pdb_pattern *p)
{
    free(p->id);
    free(p->title);
    free(p->file);
    free(p->regex_src);
    free(p->tb_value);
    for (size_t i = 0; i < p->n_literals; i++)
        free(p->literals[i]);
    free(p->literals);
    for (size_t i = 0; i < p->n_lists; i++) {
        free(p->lists[i].key);
        free(p->lists[i].src);
        pcre2_code_free(p->lists[i].re.code);
    }
    free(p->lists);
    for (size_t i = 0; i < p->n_units; i++) {
        free(p->units[i].name);
        free(p->units[i].unit);
    }
    free(p->units);
    for (size_t i = 0; i < p->n_conts; i++) {
        free(p->conts[i].src);
        pcre2_code_free(p->conts[i].re.code);
    }
    free(p->conts);
    cJSON_Delete(p->samples);
    pcre2_code_free(p->re.code);
    memset(p, 0, sizeof *p);
}

void pdb_free_prefix(pdb_prefix *p)
{
    free(p->id);
    free(p->file);
    free(p->regex_src);
    cJSON_Delete(p->samples);
    pcre2_code_free(p->re.code);
    memset(p, 0, sizeof *p);
}

void pdb_free_literals(pdb *db)
{
    for (size_t i = 0; i < db->n_literals; i++) {
        free(db->literals[i].text);
        free(db->literals[i].targets);
    }
    free(db->literals);
    db->literals = NULL;
    db->n_literals = 0;
    free(db->lit_slots);
    db->lit_slots = NULL;
    db->lit_slot_cap = 0;
    for (size_t i = 0; i < db->n_config_lits; i++)
        free(db->config_lits[i]);
    free(db->config_lits);
    db->config_lits = NULL;
    db->n_config_lits = db->cap.config_lits = 0;
    prefilter_free(db->pf);
    prefilter_free(db->pf_lean);
    prefilter_free(db->pf_names);
    db->pf = db->pf_lean = db->pf_names = NULL;
}

void pdb_free(pdb *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->n_patterns; i++)
        pdb_free_pattern(&db->patterns[i]);
    free(db->patterns);
    for (size_t i = 0; i < db->n_prefixes; i++)
        pdb_free_prefix(&db->prefixes[i]);
    free(db->prefixes);
    for (size_t i = 0; i < db->n_frames; i++) {
        free(db->frames[i].value);
        free(db->frames[i].file);
        cJSON_Delete(db->frames[i].samples);
        cJSON_Delete(db->frames[i].not_samples);
    }
    free(db->frames);
    for (size_t i = 0; i < db->n_markers; i++) {
        free(db->markers[i].literal);
        free(db->markers[i].file);
        cJSON_Delete(db->markers[i].samples);
        cJSON_Delete(db->markers[i].not_samples);
    }
    free(db->markers);
    for (size_t i = 0; i < db->n_fw_rules; i++) {
        free(db->fw_rules[i].literal);
        free(db->fw_rules[i].file);
        cJSON_Delete(db->fw_rules[i].samples);
        cJSON_Delete(db->fw_rules[i].not_samples);
    }
    free(db->fw_rules);
    for (size_t i = 0; i < db->n_stems; i++) {
        free(db->stems[i].text);
        for (size_t w = 0; w < db->stems[i].n_words; w++)
            free(db->stems[i].words[w]);
        free(db->stems[i].file);
        cJSON_Delete(db->stems[i].samples);
        cJSON_Delete(db->stems[i].not_samples);
    }
    free(db->stems);
    for (size_t i = 0; i < db->n_lex_skip_paths; i++)
        free(db->lex_skip_paths[i]);
    free(db->lex_skip_paths);
    for (size_t i = 0; i < db->n_versions; i++) {
        free(db->versions[i].literal);
        free(db->versions[i].component);
        free(db->versions[i].regex_src);
        free(db->versions[i].file);
        cJSON_Delete(db->versions[i].samples);
        cJSON_Delete(db->versions[i].not_samples);
        pcre2_code_free(db->versions[i].re.code);
    }
    free(db->versions);
    for (size_t i = 0; i < db->n_xids; i++) {
        free(db->xids[i].meaning);
        free(db->xids[i].cause);
    }
    free(db->xids);
    for (size_t i = 0; i < db->n_checklists; i++) {
        free(db->checklists[i].id);
        free(db->checklists[i].file);
        cJSON_Delete(db->checklists[i].raw);
        cJSON_Delete(db->checklists[i].json);
    }
    free(db->checklists);
    cJSON_Delete(db->steps);
    cJSON_Delete(db->conclusions);
    pdb_free_literals(db);
    pthread_mutex_destroy(&db->jit_mu);
    free(db);
}


/* ---- lookups ------------------------------------------------------------------------------ */

const char *pdb_unit_for(const pdb_pattern *p, const char *name)
{
    for (size_t i = 0; i < p->n_units; i++)
        if (strcmp(p->units[i].name, name) == 0)
            return p->units[i].unit;
    return NULL;
}
