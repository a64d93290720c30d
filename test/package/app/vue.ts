// docs/vue.md, "A contact form": the component's <script setup lang="ts">.
import {computed, reactive} from 'vue';
import {messages, useIntent} from 'sendonce/vue';

const form = reactive({name: '', email: '', message: ''});
const {state, attempts, result, conflict, loading, send, retry, discard} = useIntent('contact-form');
const request = () => ({url: '/api/contact', json: {...form}});
const busy = computed(() => state.value === 'pending' || state.value === 'sending');
const unsure = computed(() => state.value === 'unresolved' || state.value === 'expired');
const reason = computed(() => (result.value?.status === 'failed' ? (result.value.data as {reason?: string} | undefined)?.reason : undefined));

// What the template uses.
export const template = {form, state, attempts, result, conflict, loading, send, retry, discard, request, busy, unsure, reason, messages};
